import { maskSecret } from '../subscriptions/authorization.js';

/**
 * The headers of a delivery call as the delivery log keeps them (`requestHeaders` of an attempt):
 * names lower-case, every value as sent except the secrets, masked by the one function that masks
 * a subscription's credentials in the API (`maskSecret`: "****" and the last four characters of a
 * long enough value), so what the log shows can be matched with what GET /subscriptions/{id} shows.
 * - `webhook-signature`: each space-separated signature keeps its version prefix (`v1,****abcd`):
 *   a whole signature, beside the payload and timestamp the log shows too, would let whoever reads
 *   the log replay the signed call to the receiver within its timestamp tolerance.
 * - `authorization`: the scheme is kept and the credential masked: `Bearer ****abcd` (a static
 *   Bearer credential or an OAuth2 access token), `Basic ****` with no tail: a Basic credential is
 *   the base64 of `user:password`, whose last characters are the password's.
 * - Custom headers are kept as sent: the subscription API stores and returns them as given (they
 *   are not secrets, docs/subscriptions.md "customHeaders").
 * Pure and total: a value of an unexpected shape is masked whole.
 */
export function maskRequestHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const masked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    masked[key] = key === 'webhook-signature' ? maskSignatures(value) : key === 'authorization' ? maskCredential(value) : value;
  }
  return masked;
}

/** `v1,<base64> v1,<base64>` → `v1,****abcd v1,****wxyz`. */
function maskSignatures(value: string): string {
  return value
    .split(' ')
    .filter((signature) => signature.length > 0)
    .map((signature) => {
      const comma = signature.indexOf(',');
      return comma < 0 ? maskSecret(signature) : `${signature.slice(0, comma + 1)}${maskSecret(signature.slice(comma + 1))}`;
    })
    .join(' ');
}

/** The mask alone, as `maskSecret` shows a value too short to show a tail of. */
const WITHOUT_TAIL = maskSecret('');

/** `<scheme> <credential>` → `<scheme> ****abcd`; `Basic ****`. */
function maskCredential(value: string): string {
  const trimmed = value.trim();
  const space = trimmed.indexOf(' ');
  if (space < 0) return maskSecret(trimmed);
  const scheme = trimmed.slice(0, space);
  return `${scheme} ${scheme.toLowerCase() === 'basic' ? WITHOUT_TAIL : maskSecret(trimmed.slice(space + 1).trim())}`;
}
