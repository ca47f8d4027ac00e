// The subscription's own type: the outbound side takes exactly what subscriptions store.
import type { CallbackAuthorization, OAuth2Credentials as OAuth2ClientCredentials } from '../../domain/subscriptions/types.js';
import { DeliveryFailure } from './delivery-failure.js';

/**
 * The authorization forms of a subscription's callback (seed "Authentication", PRODUCT.md §5),
 * with secrets already decrypted, turned into what one call needs: an Authorization header value
 * (or an OAuth2 client to fetch a token for) and whether the service certificate is presented.
 */
export type { CallbackAuthorization, OAuth2ClientCredentials };

export type CallbackCredential =
  | { kind: 'none' }
  | { kind: 'static'; authorization: string }
  | {
      kind: 'oauth2';
      client: OAuth2ClientCredentials;
      /** mtls.twoFactor.oauth2: the token request presents the client certificate as well. */
      tokenRequestUsesClientCertificate: boolean;
    };

export interface CallbackAuthPlan {
  useClientCertificate: boolean;
  credential: CallbackCredential;
}

function withoutScheme(value: string, scheme: string): string {
  return value.trim().replace(new RegExp(`^${scheme}(?:\\s+|$)`, 'i'), '');
}

function headerValue(scheme: 'Basic' | 'Bearer', raw: string): string {
  const credential = withoutScheme(raw, scheme);
  // Validation refuses these at save time; checked again because a header injection here would
  // smuggle extra headers to the client's server.
  if (credential.length === 0) throw new DeliveryFailure(`${scheme} credential is empty`, 'BAD_CREDENTIAL');
  if (/[\r\n\0]/.test(credential)) throw new DeliveryFailure(`${scheme} credential contains a control character`, 'BAD_CREDENTIAL');
  return `${scheme} ${credential}`;
}

function checkOAuth2(client: OAuth2ClientCredentials, where: string): OAuth2ClientCredentials {
  for (const field of ['client_id', 'client_secret', 'url'] as const) {
    if (typeof client[field] !== 'string' || client[field].length === 0) throw new DeliveryFailure(`${where}.${field} is missing`, 'BAD_CREDENTIAL');
  }
  return client;
}

/**
 * One credential per call. When a subscription carries several, the most specific wins:
 * mtls.twoFactor.oauth2, then oauth2, then Bearer, then Basic. Subscription validation should
 * make this ambiguity rare; the order just makes the outcome predictable.
 */
export function planCallbackAuth(authorization: CallbackAuthorization | undefined | null): CallbackAuthPlan {
  const auth = authorization ?? {};
  const useClientCertificate = auth.mtls !== undefined && auth.mtls !== null;
  const twoFactor = auth.mtls?.twoFactor?.oauth2;
  let credential: CallbackCredential;
  if (twoFactor) {
    credential = { kind: 'oauth2', client: checkOAuth2(twoFactor, 'mtls.twoFactor.oauth2'), tokenRequestUsesClientCertificate: true };
  } else if (auth.oauth2) {
    credential = { kind: 'oauth2', client: checkOAuth2(auth.oauth2, 'oauth2'), tokenRequestUsesClientCertificate: useClientCertificate };
  } else if (auth.Bearer !== undefined) {
    credential = { kind: 'static', authorization: headerValue('Bearer', auth.Bearer) };
  } else if (auth.Basic !== undefined) {
    credential = { kind: 'static', authorization: headerValue('Basic', auth.Basic) };
  } else {
    credential = { kind: 'none' };
  }
  return { useClientCertificate, credential };
}
