// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createOutbound, OutboundConfigError, type Outbound, type OutboundConfig } from '../../src/worker/outbound/create-outbound.js';
import type { DeliveryAttemptInput } from '../../src/worker/outbound/deliver.js';
import { startHttpsReceiver, type Receiver } from '../support/receivers.js';
import { testPki, writePkiFiles, type TestPki } from '../support/test-pki.js';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const input = (url: string, extra: Partial<DeliveryAttemptInput> = {}): DeliveryAttemptInput => ({
  url,
  body: '{"id":"req_tls"}',
  eventType: 'processed-requests',
  accountId: 'acc_test',
  msgId: 'ntf_tls',
  secrets: [secret],
  ...extra,
});
const baseConfig: OutboundConfig = {
  callbackTimeoutMs: 5000,
  callbackAllowPrivateNetworks: true,
  mtlsCertFile: undefined,
  mtlsKeyFile: undefined,
  mtlsCaFile: undefined,
};

describe('deliverAttempt over TLS and mTLS', () => {
  let pki: TestPki;
  let files: ReturnType<typeof writePkiFiles>;
  /** Trusts the test CA (MTLS_CA_FILE) and holds the service certificate. */
  let withCertificate: Outbound;
  /** Trusts the test CA but has no certificate of its own. */
  let withoutCertificate: Outbound;
  /** Default trust only. */
  let defaultTrust: Outbound;
  let tlsReceiver: Receiver;
  let mtlsReceiver: Receiver;

  before(async () => {
    pki = await testPki();
    files = writePkiFiles(pki);
    withCertificate = createOutbound({ ...baseConfig, mtlsCertFile: files.certFile, mtlsKeyFile: files.keyFile, mtlsCaFile: files.caFile });
    withoutCertificate = createOutbound({ ...baseConfig, mtlsCaFile: files.caFile });
    defaultTrust = createOutbound(baseConfig);
    tlsReceiver = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert });
    mtlsReceiver = await startHttpsReceiver({ key: pki.server.key, cert: pki.server.cert, ca: pki.ca.cert, requireClientCertificate: true });
  });
  after(async () => {
    await Promise.all([withCertificate, withoutCertificate, defaultTrust].map((o) => o.close()));
    await Promise.all([tlsReceiver, mtlsReceiver].map((r) => r.close()));
  });

  it('trusts a server certificate from MTLS_CA_FILE, by IP and by name', async () => {
    for (const url of [tlsReceiver.url, `https://localhost:${tlsReceiver.port}/`]) {
      const result = await withoutCertificate.deliverAttempt(input(url));
      assert.equal(result.ok, true, result.error);
    }
    assert.equal(tlsReceiver.requests.at(-1)!.body, '{"id":"req_tls"}');
  });

  it('fails on a server certificate it does not trust, before sending anything', async () => {
    const before = tlsReceiver.requests.length;
    const result = await defaultTrust.deliverAttempt(input(tlsReceiver.url));
    assert.equal(result.ok, false);
    assert.match(result.error!, /TLS handshake with 127\.0\.0\.1:\d+ failed: .*(CERT|VERIFY)/);
    const selfSigned = await startHttpsReceiver({ key: pki.untrustedServer.key, cert: pki.untrustedServer.cert });
    try {
      const untrusted = await withCertificate.deliverAttempt(input(selfSigned.url));
      assert.equal(untrusted.ok, false);
      assert.match(untrusted.error!, /TLS handshake .* failed: .*SELF_SIGNED/);
      assert.equal(selfSigned.requests.length, 0);
    } finally {
      await selfSigned.close();
    }
    assert.equal(tlsReceiver.requests.length, before);
  });

  it('presents the service certificate when the subscription asks for mTLS', async () => {
    const result = await withCertificate.deliverAttempt(input(mtlsReceiver.url, { authorization: { mtls: {}, Bearer: 'tok' } }));
    assert.equal(result.ok, true, result.error);
    const seen = mtlsReceiver.requests.at(-1)!;
    assert.equal(seen.clientCertificateCN, pki.clientCommonName);
    assert.equal(seen.headers.authorization, 'Bearer tok', 'mTLS combines with the other methods');
  });

  it('does not present the certificate when the subscription does not ask, and the receiver refuses', async () => {
    const before = mtlsReceiver.requests.length;
    const result = await withCertificate.deliverAttempt(input(mtlsReceiver.url, { authorization: { Bearer: 'tok' } }));
    assert.equal(result.ok, false);
    // TLS 1.3 servers refuse a missing certificate after the client's handshake completes, so
    // the client sees either the alert or the connection closing.
    assert.match(result.error!, /closed unexpectedly|CERTIFICATE_REQUIRED|TLS handshake/);
    assert.equal(mtlsReceiver.requests.length, before);
  });

  it('an mTLS subscription without a configured service certificate fails with the reason', async () => {
    const result = await withoutCertificate.deliverAttempt(input(mtlsReceiver.url, { authorization: { mtls: {} } }));
    assert.equal(result.ok, false);
    assert.match(result.error!, /mTLS is required but MTLS_CERT_FILE and MTLS_KEY_FILE are not configured/);
  });

  it('refuses to start with unreadable certificate files', () => {
    assert.throws(
      () => createOutbound({ ...baseConfig, mtlsCertFile: '/nonexistent/cert.pem', mtlsKeyFile: files.keyFile }),
      (error: Error) => error instanceof OutboundConfigError && /MTLS_CERT_FILE: cannot read \/nonexistent\/cert.pem/.test(error.message),
    );
  });
});
