// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createOutbound, type OutboundConfig } from '../../src/worker/outbound/create-outbound.js';
import type { OAuth2ClientCredentials } from '../../src/worker/outbound/callback-auth.js';
import type { DeliveryAttemptInput } from '../../src/worker/outbound/deliver.js';
import { startAuthorizationServer, type AuthorizationServer } from '../support/authorization-server.js';
import { startHttpReceiver, startHttpsReceiver, type Receiver, type Responder } from '../support/receivers.js';
import { testPki, writePkiFiles } from '../support/test-pki.js';

const baseConfig: OutboundConfig = {
  callbackTimeoutMs: 5000,
  callbackAllowPrivateNetworks: true,
  mtlsCertFile: undefined,
  mtlsKeyFile: undefined,
  mtlsCaFile: undefined,
};
const secret = `whsec_${randomBytes(32).toString('base64')}`;
const input = (url: string, oauth2: OAuth2ClientCredentials, mtls = false): DeliveryAttemptInput => ({
  url,
  body: '{"id":"req_oauth"}',
  eventType: 'registered-requests',
  accountId: 'acc_test',
  msgId: 'ntf_oauth',
  secrets: [secret],
  authorization: mtls ? { mtls: { twoFactor: { oauth2 } } } : { oauth2 },
});

/** A resource server: 200 for a valid token of the AS with the right audience, else 401. */
function protectedBy(as: AuthorizationServer, revoked: Set<string> = new Set()): Responder {
  return async (request) => {
    const token = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1];
    if (!token || revoked.has(token)) return { status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    try {
      await as.verifyAccessToken(token);
      return { status: 200 };
    } catch {
      return { status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
    }
  };
}

const bearer = (receiver: Receiver, index: number) => String(receiver.requests[index]!.headers.authorization).replace(/^Bearer /, '');

describe('OAuth2 client credentials for callbacks', () => {
  let as: AuthorizationServer;
  let client: OAuth2ClientCredentials;
  before(async () => {
    as = await startAuthorizationServer({ accessTokenTtlSeconds: 60 });
    client = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
  });
  after(() => as.close());

  it('gets a token with the audience, the receiver verifies it, and later attempts reuse it', async () => {
    const outbound = createOutbound(baseConfig);
    const receiver = await startHttpReceiver(protectedBy(as));
    try {
      const first = await outbound.deliverAttempt(input(receiver.url, client));
      const second = await outbound.deliverAttempt(input(receiver.url, client));
      assert.equal(first.ok, true, first.error);
      assert.equal(second.ok, true, second.error);
      assert.equal(as.tokenRequests.length, 1);
      const request = as.tokenRequests[0]!;
      assert.equal(request.params.grant_type, 'client_credentials');
      assert.equal(request.params.audience, as.audience);
      assert.equal(request.params.resource, as.audience);
      const claims = await as.verifyAccessToken(bearer(receiver, 0));
      assert.equal(claims.aud, as.audience);
      assert.equal(claims.client_id, as.clientId);
      assert.equal(bearer(receiver, 1), bearer(receiver, 0));
    } finally {
      await outbound.close();
      await receiver.close();
      as.tokenRequests.length = 0;
    }
  });

  it('fetches a new token once the cached one is about to expire', async () => {
    let clockOffset = 0;
    const outbound = createOutbound(baseConfig, { now: () => Date.now() + clockOffset });
    const receiver = await startHttpReceiver(protectedBy(as));
    try {
      assert.equal((await outbound.deliverAttempt(input(receiver.url, client))).ok, true);
      clockOffset = 50_000; // 60 s lifetime, refreshed in its last 10 %
      assert.equal((await outbound.deliverAttempt(input(receiver.url, client))).ok, true);
      assert.equal(as.tokenRequests.length, 1);
      clockOffset = 55_000;
      assert.equal((await outbound.deliverAttempt(input(receiver.url, client))).ok, true);
      assert.equal(as.tokenRequests.length, 2);
      assert.notEqual(bearer(receiver, 2), bearer(receiver, 1));
    } finally {
      await outbound.close();
      await receiver.close();
      as.tokenRequests.length = 0;
    }
  });

  it('after a 401 drops the token and retries once with a fresh one, within the same attempt', async () => {
    const revoked = new Set<string>();
    const outbound = createOutbound(baseConfig);
    const receiver = await startHttpReceiver(protectedBy(as, revoked));
    try {
      assert.equal((await outbound.deliverAttempt(input(receiver.url, client))).ok, true);
      revoked.add(bearer(receiver, 0));
      const result = await outbound.deliverAttempt(input(receiver.url, client));
      assert.equal(result.ok, true, result.error);
      assert.equal(receiver.requests.length, 3);
      assert.equal(bearer(receiver, 1), bearer(receiver, 0));
      assert.notEqual(bearer(receiver, 2), bearer(receiver, 0));
      assert.equal(as.tokenRequests.length, 2);

      // A callback that refuses every token: one refresh, then the 401 is the attempt's result.
      receiver.respond(() => ({ status: 401 }));
      const refused = await outbound.deliverAttempt(input(receiver.url, client));
      assert.equal(refused.ok, false);
      assert.equal(refused.statusCode, 401);
      assert.equal(receiver.requests.length, 5);
      assert.equal(as.tokenRequests.length, 3);
    } finally {
      await outbound.close();
      await receiver.close();
      as.tokenRequests.length = 0;
    }
  });

  it('50 concurrent deliveries share one token request', async () => {
    const outbound = createOutbound(baseConfig, { limits: { overall: 64, perAddress: 64, reserve: 0, lightBelow: 1 } });
    const receiver = await startHttpReceiver(protectedBy(as));
    try {
      const results = await Promise.all(Array.from({ length: 50 }, () => outbound.deliverAttempt(input(receiver.url, client))));
      assert.ok(
        results.every((r) => r.ok),
        results.find((r) => !r.ok)?.error,
      );
      assert.equal(as.tokenRequests.length, 1);
      assert.equal(new Set(receiver.requests.map((r) => r.headers.authorization)).size, 1);
    } finally {
      await outbound.close();
      await receiver.close();
      as.tokenRequests.length = 0;
    }
  });

  it('a refused token request fails the attempt with the OAuth2 error, and the callback is not called', async () => {
    const outbound = createOutbound(baseConfig);
    const receiver = await startHttpReceiver(protectedBy(as));
    try {
      const result = await outbound.deliverAttempt(input(receiver.url, { ...client, client_secret: 'wrong-secret' }));
      assert.equal(result.ok, false);
      assert.match(result.error!, /^OAuth2 token request to http:\/\/127\.0\.0\.1:\d+\/token failed: HTTP 401 invalid_client/);
      assert.doesNotMatch(result.error!, /wrong-secret/);
      assert.equal(receiver.requests.length, 0);
      const garbage = await startHttpReceiver(() => ({ status: 200, body: '<html>login</html>' }));
      const notJson = await outbound.deliverAttempt(input(receiver.url, { ...client, url: `${garbage.url}/token` }));
      await garbage.close();
      assert.match(notJson.error!, /has no usable access_token/);
    } finally {
      await outbound.close();
      await receiver.close();
      as.tokenRequests.length = 0;
    }
  });
});

describe('mTLS combined with OAuth2 (mtls.twoFactor.oauth2)', () => {
  it('presents the client certificate to the token endpoint and to the callback', async () => {
    const pki = await testPki();
    const files = writePkiFiles(pki);
    const tls = { key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true };
    const as = await startAuthorizationServer({ tls });
    const receiver = await startHttpsReceiver(tls, protectedBy(as));
    const outbound = createOutbound({ ...baseConfig, mtlsCertFile: files.certFile, mtlsKeyFile: files.keyFile, mtlsCaFile: files.caFile });
    try {
      const client = { client_id: as.clientId, client_secret: as.clientSecret, url: as.tokenUrl, audience: as.audience };
      const result = await outbound.deliverAttempt(input(receiver.url, client, true));
      assert.equal(result.ok, true, result.error);
      assert.equal(as.tokenRequests.length, 1);
      assert.equal(as.tokenRequests[0]!.clientCertificateCN, pki.clientCommonName);
      assert.equal(receiver.requests[0]!.clientCertificateCN, pki.clientCommonName);

      // Plain OAuth2 (no mTLS) cannot even reach this token endpoint: its TLS handshake needs the certificate.
      const plain = await outbound.deliverAttempt(input(receiver.url, client, false));
      assert.equal(plain.ok, false);
      assert.match(plain.error!, /^OAuth2 token request to https:\/\/127\.0\.0\.1:\d+\/token failed: /);
      assert.equal(as.tokenRequests.length, 1);
    } finally {
      await outbound.close();
      await receiver.close();
      await as.close();
    }
  });
});
