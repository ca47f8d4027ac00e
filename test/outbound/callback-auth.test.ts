// needs: every-node-line
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planCallbackAuth } from '../../src/worker/outbound/callback-auth.js';
import { DeliveryFailure } from '../../src/worker/outbound/delivery-failure.js';

const client = { client_id: 'id', client_secret: 'secret', url: 'https://auth.example.com/token', audience: 'api' };

describe('callback authorization plan', () => {
  it('no authorization: no header, no client certificate', () => {
    assert.deepEqual(planCallbackAuth(undefined), { useClientCertificate: false, credential: { kind: 'none' } });
    assert.deepEqual(planCallbackAuth({}), { useClientCertificate: false, credential: { kind: 'none' } });
  });

  it('Basic and Bearer with or without their scheme prefix', () => {
    const basic = Buffer.from('user:pa:ss').toString('base64');
    for (const value of [basic, `Basic ${basic}`, `basic  ${basic} `]) {
      assert.deepEqual(planCallbackAuth({ Basic: value }).credential, { kind: 'static', authorization: `Basic ${basic}` });
    }
    for (const value of ['tok.en', 'Bearer tok.en', 'BEARER tok.en']) {
      assert.deepEqual(planCallbackAuth({ Bearer: value }).credential, { kind: 'static', authorization: 'Bearer tok.en' });
    }
  });

  it('refuses empty credentials and header injection', () => {
    assert.throws(() => planCallbackAuth({ Bearer: 'Bearer ' }), DeliveryFailure);
    assert.throws(() => planCallbackAuth({ Bearer: 'x\r\nX-Evil: 1' }), /control character/);
    assert.throws(() => planCallbackAuth({ oauth2: { ...client, url: '' } }), /oauth2.url is missing/);
  });

  it('OAuth2 alone, mTLS alone, mTLS with Bearer, mTLS with twoFactor OAuth2', () => {
    assert.deepEqual(planCallbackAuth({ oauth2: client }), {
      useClientCertificate: false,
      credential: { kind: 'oauth2', client, tokenRequestUsesClientCertificate: false },
    });
    assert.deepEqual(planCallbackAuth({ mtls: {} }), { useClientCertificate: true, credential: { kind: 'none' } });
    assert.deepEqual(planCallbackAuth({ mtls: {}, Bearer: 't' }), {
      useClientCertificate: true,
      credential: { kind: 'static', authorization: 'Bearer t' },
    });
    assert.deepEqual(planCallbackAuth({ mtls: { twoFactor: { oauth2: client } } }), {
      useClientCertificate: true,
      credential: { kind: 'oauth2', client, tokenRequestUsesClientCertificate: true },
    });
  });

  it('the most specific credential wins: twoFactor OAuth2, OAuth2, Bearer, Basic', () => {
    const other = { ...client, client_id: 'other' };
    assert.equal((planCallbackAuth({ oauth2: other, mtls: { twoFactor: { oauth2: client } }, Bearer: 'b' }).credential as { client: unknown }).client, client);
    assert.equal(planCallbackAuth({ oauth2: client, Bearer: 'b', Basic: 'x' }).credential.kind, 'oauth2');
    assert.deepEqual(planCallbackAuth({ Bearer: 'b', Basic: 'x' }).credential, { kind: 'static', authorization: 'Bearer b' });
  });
});
