import { CONSOLE_LINK_CLIENT_PREFIX } from './console-link-code.js';

/**
 * Token revocation rules (docs/tokens.md, "Deactivation"). A token that verifies is still refused
 * when its account, its client or its console-link session was cut: deactivated, deleted or
 * revoked, or reactivated after the token was issued. Pure.
 */

export type RevocationKind = 'account' | 'client' | 'console-link';
type RefusedReason = 'deactivated' | 'deleted' | 'revoked';

/** What is refused of one subject's tokens. */
export interface Revocation {
  /** Every token, for this reason; null when the subject is active. */
  refused: RefusedReason | null;
  /** Tokens issued (`iat`, epoch ms) before this instant; null when none. */
  issuedBefore: number | null;
}

/** What changed, as the use case that changed it says. */
export type RevocationChange = 'deactivated' | 'reactivated' | 'deleted' | 'revoked';

/**
 * The revocation a change leaves. A reactivation refuses the tokens issued before the second it
 * happened in: `iat` has whole seconds, so a token issued in that same second (after the
 * reactivation, from the token endpoint) must pass. The tokens it cuts were issued in earlier
 * seconds, before the deactivation it ends — or during it, by a process whose client cache had
 * not seen the deactivation yet.
 */
export function revocationAfter(change: RevocationChange, now: number): Revocation {
  if (change === 'reactivated') return { refused: null, issuedBefore: Math.floor(now / 1000) * 1000 };
  return { refused: change, issuedBefore: null };
}

const SUBJECT_NAMES: Record<RevocationKind, string> = { account: 'account', client: 'client', 'console-link': 'console link session' };

/** Why `revocation` refuses a token issued at `issuedAtMs` (for `error_description`), or undefined when it does not. */
export function refusalOf(kind: RevocationKind, revocation: Revocation | undefined, issuedAtMs: number): string | undefined {
  if (!revocation) return undefined;
  if (revocation.refused !== null) return `the ${SUBJECT_NAMES[kind]} was ${revocation.refused}`;
  if (revocation.issuedBefore !== null && issuedAtMs < revocation.issuedBefore) return `the token was issued before the ${SUBJECT_NAMES[kind]} was reactivated`;
  return undefined;
}

/** The console link a token's `client_id` names (`console-link:cln_…`), or undefined for an OAuth client's token. */
export function consoleLinkIdOf(clientId: string): string | undefined {
  return clientId.startsWith(CONSOLE_LINK_CLIENT_PREFIX) ? clientId.slice(CONSOLE_LINK_CLIENT_PREFIX.length) : undefined;
}
