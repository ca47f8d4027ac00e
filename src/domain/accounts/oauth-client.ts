/** An account's OAuth client: the credentials of the client-credentials grant (the oauth-clients repository maps rows to it). */
export interface OAuthClient {
  clientId: string;
  accountId: string;
  scopes: string[];
  /** Only the secret's hash is stored (tokens/client-secret.ts). */
  secretHash: string;
  /** A rotated-out secret, valid until `previousSecretExpiresAt`. */
  previousSecretHash: string | null;
  previousSecretExpiresAt: number | null;
  active: boolean;
  createdAt: number;
  updatedAt: number;
}
