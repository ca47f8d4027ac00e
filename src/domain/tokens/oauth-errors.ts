/**
 * RFC 6749 §5.2 token endpoint errors, one class with the code, status and whether it came from
 * HTTP Basic authentication (then a 401 carries `WWW-Authenticate: Basic`).
 */
export type OAuthErrorCode = 'invalid_request' | 'invalid_client' | 'invalid_grant' | 'unauthorized_client' | 'unsupported_grant_type' | 'invalid_scope' | 'temporarily_unavailable';

export class OAuthError extends Error {
  readonly status: number;
  retryAfterSeconds: number | undefined;
  usedBasicAuth = false;

  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    status?: number,
  ) {
    super(description);
    this.name = 'OAuthError';
    this.status = status ?? (code === 'invalid_client' ? 401 : code === 'temporarily_unavailable' ? 429 : 400);
  }
}
