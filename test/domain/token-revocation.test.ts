// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { consoleLinkIdOf, refusalOf, revocationAfter } from '../../src/domain/tokens/revocation.js';

describe('token revocation rules', () => {
  const at = Date.UTC(2026, 10, 24, 12, 0, 0, 400);

  it('deactivated, deleted and revoked subjects refuse every token, whenever it was issued', () => {
    assert.equal(refusalOf('account', revocationAfter('deactivated', at), at + 60_000), 'the account was deactivated');
    assert.equal(refusalOf('client', revocationAfter('deleted', at), at - 60_000), 'the client was deleted');
    assert.equal(refusalOf('console-link', revocationAfter('revoked', at), at), 'the console link session was revoked');
  });

  it('a reactivation refuses the tokens issued in the seconds before it, not those of its own second or later', () => {
    const reactivated = revocationAfter('reactivated', at);
    assert.deepEqual(reactivated, { refused: null, issuedBefore: at - 400 });
    // iat has whole seconds: a token issued one second earlier is cut, one of the same second passes.
    assert.equal(refusalOf('client', reactivated, at - 1400), 'the token was issued before the client was reactivated');
    assert.equal(refusalOf('client', reactivated, at - 400), undefined);
    assert.equal(refusalOf('client', reactivated, at + 5_000), undefined);
  });

  it('no revocation refuses nothing; a console link session is told from a client by its client_id', () => {
    assert.equal(refusalOf('account', undefined, at), undefined);
    assert.equal(consoleLinkIdOf('console-link:cln_123'), 'cln_123');
    assert.equal(consoleLinkIdOf('cli_123'), undefined);
  });
});
