/** A console link: a one-time code exchanged for a token of its account (the console-links repository maps rows to it). */
export interface ConsoleLink {
  /** `cln_…`: what revoking the link's session names. */
  id: string;
  accountId: string;
  createdAt: number;
  /** Its code can be exchanged until then. */
  expiresAt: number;
  /** The lifetime of the token it grants. */
  tokenTtlMs: number;
  usedAt: number | null;
  revokedAt: number | null;
}
