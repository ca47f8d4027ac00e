import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

/**
 * Certificates for TLS and mTLS tests, made in-process with `selfsigned` (EC P-256, SHA-256):
 * a test CA, a server certificate for localhost/127.0.0.1 and a client certificate both signed by
 * it, and a self-signed server certificate nobody trusts.
 */

interface KeyAndCert {
  key: string;
  cert: string;
}

export interface TestPki {
  ca: KeyAndCert;
  /** Signed by `ca`; valid for localhost and 127.0.0.1. */
  server: KeyAndCert;
  /** Signed by `ca`; for the service's mTLS identity. CN = `clientCommonName`. */
  client: KeyAndCert;
  clientCommonName: string;
  /** Self-signed, trusted by nobody. */
  untrustedServer: KeyAndCert;
}

const SERVER_NAMES = [
  { type: 2 as const, value: 'localhost' },
  { type: 7 as const, ip: '127.0.0.1' },
];

async function issue(commonName: string, ca: KeyAndCert | undefined, usage: 'ca' | 'server' | 'client'): Promise<KeyAndCert> {
  const extensions =
    usage === 'ca'
      ? [
          { name: 'basicConstraints' as const, cA: true, critical: true },
          { name: 'keyUsage' as const, keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
        ]
      : [
          { name: 'basicConstraints' as const, cA: false },
          { name: 'keyUsage' as const, digitalSignature: true, keyEncipherment: true },
          usage === 'server' ? { name: 'extKeyUsage' as const, serverAuth: true } : { name: 'extKeyUsage' as const, clientAuth: true },
          ...(usage === 'server' ? [{ name: 'subjectAltName' as const, altNames: SERVER_NAMES }] : []),
        ];
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    algorithm: 'sha256',
    keyType: 'ec',
    extensions,
    ...(ca ? { ca: { key: ca.key, cert: ca.cert } } : {}),
  });
  return { key: pems.private, cert: pems.cert };
}

let shared: Promise<TestPki> | undefined;

/** One PKI per test process: generating keys is the slow part and the material is read-only. */
export function testPki(): Promise<TestPki> {
  shared ??= (async () => {
    const ca = await issue('Reward Request Service Test CA', undefined, 'ca');
    const clientCommonName = 'reward-request-service-client';
    const [server, client, untrustedServer] = await Promise.all([issue('localhost', ca, 'server'), issue(clientCommonName, ca, 'client'), issue('localhost', undefined, 'server')]);
    return { ca, server, client, clientCommonName, untrustedServer };
  })();
  return shared;
}

/** Writes the PEMs where MTLS_CERT_FILE / MTLS_KEY_FILE / MTLS_CA_FILE can point. */
export function writePkiFiles(pki: TestPki): { certFile: string; keyFile: string; caFile: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rewards-pki-'));
  const certFile = join(dir, 'client.crt');
  const keyFile = join(dir, 'client.key');
  const caFile = join(dir, 'ca.crt');
  writeFileSync(certFile, pki.client.cert);
  writeFileSync(keyFile, pki.client.key, { mode: 0o600 });
  writeFileSync(caFile, pki.ca.cert);
  return { certFile, keyFile, caFile };
}
