// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { authorizationUrls, maskAuthorization, maskSecret, normalizeAuthorization, restoreMaskedSecrets } from '../../src/domain/subscriptions/authorization.js';
import type { CallbackAuthorization } from '../../src/domain/subscriptions/types.js';

const BASIC = Buffer.from('shop:s3cret-password').toString('base64'); // 28 characters, ends in "cmQ="
const oauth2 = (secret = 'client-secret-0123456789') => ({ client_id: 'cid', client_secret: secret, url: 'https://auth.example.com/token', audience: 'hooks' });

describe('callback authorization: masking', () => {
  it('shows "****" and the last four characters of a secret of twelve or more characters', () => {
    assert.equal(maskSecret('abcdefghijkl'), '****ijkl');
    assert.equal(maskSecret('a-much-longer-token-WXYZ'), '****WXYZ');
  });

  it('hides short secrets entirely: four of eleven characters would give too much away', () => {
    assert.equal(maskSecret('abcdefghijk'), '****');
    assert.equal(maskSecret('x'), '****');
  });

  it('masks every secret member and nothing else, without touching the input', () => {
    const auth: CallbackAuthorization = { Bearer: 'token-abcdefgh1234', mtls: { twoFactor: { oauth2: oauth2() } } };
    const masked = maskAuthorization(auth);
    assert.deepEqual(masked, {
      Bearer: '****1234',
      mtls: { twoFactor: { oauth2: { client_id: 'cid', client_secret: '****6789', url: 'https://auth.example.com/token', audience: 'hooks' } } },
    });
    assert.equal(auth.Bearer, 'token-abcdefgh1234');
    assert.deepEqual(maskAuthorization({ Basic: BASIC, oauth2: oauth2('another-secret-9876') }), { Basic: '****cmQ=', oauth2: { ...oauth2(), client_secret: '****9876' } });
  });
});

describe('callback authorization: normalising', () => {
  it('removes the "Basic " and "Bearer " scheme prefixes, in any case', () => {
    assert.deepEqual(normalizeAuthorization({ Basic: `Basic ${BASIC}` }, 'a'), { authorization: { Basic: BASIC }, errors: [] });
    assert.deepEqual(normalizeAuthorization({ Basic: `basic   ${BASIC}` }, 'a').authorization, { Basic: BASIC });
    assert.deepEqual(normalizeAuthorization({ Bearer: 'BEARER abc.def-ghi_jkl~mno+pqr/stu==' }, 'a').authorization, { Bearer: 'abc.def-ghi_jkl~mno+pqr/stu==' });
  });

  it('treats an empty object and null as "no authorization"', () => {
    assert.deepEqual(normalizeAuthorization({}, 'a'), { authorization: null, errors: [] });
    assert.deepEqual(normalizeAuthorization(null, 'a'), { authorization: null, errors: [] });
  });

  it('accepts mTLS alone and combined with one header method', () => {
    assert.deepEqual(normalizeAuthorization({ mtls: {} }, 'a'), { authorization: { mtls: {} }, errors: [] });
    assert.equal(normalizeAuthorization({ mtls: {}, Bearer: 'tok' }, 'a').errors.length, 0);
    assert.equal(normalizeAuthorization({ mtls: { twoFactor: { oauth2: oauth2() } } }, 'a').errors.length, 0);
  });

  it('refuses a Basic value that is not base64 of user:password', () => {
    const notBase64 = normalizeAuthorization({ Basic: 'user:password' }, 'body.callback.authorization');
    assert.deepEqual(notBase64.errors, [{ path: 'body.callback.authorization.Basic', message: 'must be the base64 encoding of "user:password", optionally prefixed with "Basic "' }]);
    const noColon = normalizeAuthorization({ Basic: Buffer.from('justauser').toString('base64') }, 'p');
    assert.deepEqual(noColon.errors, [{ path: 'p.Basic', message: 'must be the base64 encoding of "user:password" (the decoded value has no ":")' }]);
    assert.deepEqual(normalizeAuthorization({ Basic: 'Basic ' }, 'p').errors, [{ path: 'p.Basic', message: 'must not be empty' }]);
    const control = normalizeAuthorization({ Basic: Buffer.from('a:b\r\nX: y').toString('base64') }, 'p');
    assert.deepEqual(control.errors, [{ path: 'p.Basic', message: 'must not encode control characters' }]);
  });

  it('refuses a Bearer value that is not an RFC 6750 token', () => {
    const errors = normalizeAuthorization({ Bearer: 'has spaces inside' }, 'p').errors;
    assert.deepEqual(errors, [{ path: 'p.Bearer', message: 'must be a token of letters, digits and -._~+/ (RFC 6750), optionally prefixed with "Bearer "' }]);
    assert.deepEqual(normalizeAuthorization({ Bearer: 'Bearer  ' }, 'p').errors, [{ path: 'p.Bearer', message: 'must not be empty' }]);
  });

  it('refuses two methods that would both set the Authorization header', () => {
    const message = 'Basic, Bearer, oauth2 and mtls.twoFactor.oauth2 each set the Authorization header: give at most one (mtls combines with any one)';
    assert.deepEqual(normalizeAuthorization({ Basic: BASIC, Bearer: 'tok' }, 'p').errors, [{ path: 'p', message }]);
    assert.deepEqual(normalizeAuthorization({ oauth2: oauth2(), mtls: { twoFactor: { oauth2: oauth2() } } }, 'p').errors, [{ path: 'p', message }]);
  });

  it('checks the OAuth2 token URL with the callback URL syntax rules', () => {
    const errors = normalizeAuthorization({ oauth2: { ...oauth2(), url: 'ftp://auth.example.com/token' } }, 'p').errors;
    assert.deepEqual(errors, [{ path: 'p.oauth2.url', message: 'must use http or https' }]);
    const nested = normalizeAuthorization({ mtls: { twoFactor: { oauth2: { ...oauth2(), url: 'https://u:p@auth.example.com/' } } } }, 'p').errors;
    assert.deepEqual(nested, [{ path: 'p.mtls.twoFactor.oauth2.url', message: 'must not carry credentials; use callback.authorization' }]);
  });

  it('lists the token URLs the service will call, for the network check', () => {
    assert.deepEqual(authorizationUrls({ mtls: { twoFactor: { oauth2: oauth2() } } }, 'p'), [{ path: 'p.mtls.twoFactor.oauth2.url', url: 'https://auth.example.com/token' }]);
    assert.deepEqual(authorizationUrls({ Bearer: 'x' }, 'p'), []);
  });
});

describe('callback authorization: masked values sent back', () => {
  const stored: CallbackAuthorization = { Bearer: 'stored-token-abcd1234' };
  const url = 'https://hooks.example.com/a';

  it('restores the stored secret when the masked value matches it', () => {
    const next: CallbackAuthorization = { Bearer: '****1234' };
    assert.deepEqual(restoreMaskedSecrets(next, url, stored, url, 'p'), []);
    assert.equal(next.Bearer, 'stored-token-abcd1234');
  });

  it('keeps the secret when only the path of the callback URL changes', () => {
    const next: CallbackAuthorization = { Bearer: '****1234' };
    assert.deepEqual(restoreMaskedSecrets(next, 'https://hooks.example.com/other?x=1', stored, url, 'p'), []);
    assert.equal(next.Bearer, 'stored-token-abcd1234');
  });

  it('refuses a masked secret whose destination moves to another origin', () => {
    const next: CallbackAuthorization = { Bearer: '****1234' };
    assert.deepEqual(restoreMaskedSecrets(next, 'https://attacker.example.net/a', stored, url, 'p'), [
      { path: 'p.Bearer', message: 'is masked but callback.url, where it is sent, moved to another origin; send the full secret again' },
    ]);
    const storedOAuth: CallbackAuthorization = { oauth2: oauth2() };
    const movedToken: CallbackAuthorization = { oauth2: { ...oauth2(), client_secret: '****6789', url: 'https://elsewhere.example.com/token' } };
    assert.deepEqual(restoreMaskedSecrets(movedToken, url, storedOAuth, url, 'p'), [
      { path: 'p.oauth2.client_secret', message: 'is masked but oauth2.url, where it is sent, moved to another origin; send the full secret again' },
    ]);
  });

  it('binds an OAuth2 client secret to the callback too: the token it obtains is sent there', () => {
    const storedOAuth: CallbackAuthorization = { oauth2: oauth2() };
    const sameTokenUrl: CallbackAuthorization = { oauth2: { ...oauth2(), client_secret: '****6789' } };
    assert.deepEqual(restoreMaskedSecrets(sameTokenUrl, 'https://attacker.example.net/a', storedOAuth, url, 'p'), [
      { path: 'p.oauth2.client_secret', message: 'is masked but callback.url, where the tokens it obtains are sent, moved to another origin; send the full secret again' },
    ]);
    assert.equal(sameTokenUrl.oauth2!.client_secret, '****6789', 'the stored secret is not put in');
    const storedMtls: CallbackAuthorization = { mtls: { twoFactor: { oauth2: oauth2() } } };
    const nested: CallbackAuthorization = { mtls: { twoFactor: { oauth2: { ...oauth2(), client_secret: '****6789' } } } };
    assert.equal(restoreMaskedSecrets(nested, 'https://attacker.example.net/a', storedMtls, url, 'p')[0]!.path, 'p.mtls.twoFactor.oauth2.client_secret');
  });

  it('refuses a masked value that matches nothing stored, or a different member', () => {
    const message = 'is a masked value that matches no stored secret; send the full secret';
    assert.deepEqual(restoreMaskedSecrets({ Bearer: '****9999' }, url, stored, url, 'p'), [{ path: 'p.Bearer', message }]);
    assert.deepEqual(restoreMaskedSecrets({ Basic: '****1234' }, url, stored, url, 'p'), [{ path: 'p.Basic', message }]);
    assert.deepEqual(restoreMaskedSecrets({ Bearer: '****1234' }, url, null, undefined, 'p'), [{ path: 'p.Bearer', message }]);
  });

  it('restores a masked OAuth2 client_secret while client_id and audience change', () => {
    const storedOAuth: CallbackAuthorization = { oauth2: oauth2() };
    const next: CallbackAuthorization = { oauth2: { client_id: 'new-id', client_secret: '****6789', url: 'https://auth.example.com/token', audience: 'other' } };
    assert.deepEqual(restoreMaskedSecrets(next, url, storedOAuth, url, 'p'), []);
    assert.deepEqual(next.oauth2, { client_id: 'new-id', client_secret: 'client-secret-0123456789', url: 'https://auth.example.com/token', audience: 'other' });
  });
});
