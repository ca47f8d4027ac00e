// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Type } from 'typebox';
import { parseImportFile } from '../../src/domain/experiences/import-file.js';
import { DomainError } from '../../src/domain/errors.js';
import { explainSchemaErrors, validatorCompiler } from '../../src/schema-validation.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

/**
 * Schema errors in the caller's words: a member that must be one of a few values (a union of
 * literals, an `enum`) says which, once per member, on every route and in the experiences import
 * file, in place of ajv's "must be equal to constant" for each value.
 */

const PRIZE = { id: 'p1', bucket: 'b', title: 'T', value: 5, kind: 'coupon' };

function faultsOf(schema: object, value: unknown, httpPart = 'body') {
  const validate = validatorCompiler({ schema, httpPart, method: 'POST', url: '/x' }) as unknown as ((v: unknown) => boolean) & { errors: never[] };
  assert.equal(validate(value), false);
  return explainSchemaErrors(validate.errors);
}

describe('schema errors in words', () => {
  it('a union of literals names its values once, whatever was sent in its place', () => {
    const schema = Type.Object({ status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]) });
    for (const sent of ['bogus', 7, null, { a: 1 }]) {
      assert.deepEqual(faultsOf(schema, { status: sent }), [{ pointer: ['status'], message: 'must be one of pending, succeeded, failed' }], JSON.stringify(sent));
    }
  });

  it('an enum, a single constant, a nullable union of literals and a nested one', () => {
    assert.deepEqual(faultsOf(Type.Object({ name: Type.String({ enum: ['a', 'b'] }) }), { name: 'c' }), [{ pointer: ['name'], message: 'must be one of a, b' }]);
    assert.deepEqual(faultsOf(Type.Object({ kind: Type.Literal('only') }), { kind: 'other' }), [{ pointer: ['kind'], message: 'must be only' }]);
    const nullable = Type.Object({ level: Type.Union([Type.Literal('low'), Type.Literal('high'), Type.Null()]) });
    assert.deepEqual(faultsOf(nullable, { level: 'mid' }), [{ pointer: ['level'], message: 'must be one of low, high, null' }]);
    const nested = Type.Object({ n: Type.Union([Type.Union([Type.Literal(1), Type.Literal(2)]), Type.Literal(3)]) });
    assert.deepEqual(faultsOf(nested, { n: 4 }), [{ pointer: ['n'], message: 'must be one of 1, 2, 3' }]);
  });

  it('other errors keep their words; a union that is not of literals is not listed', () => {
    const schema = Type.Object({ a: Type.Integer(), b: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]) }, { additionalProperties: false });
    assert.deepEqual(faultsOf(schema, { a: 'x', b: 1 }), [{ pointer: ['a'], message: 'must be an integer (a whole number)' }]);
    assert.deepEqual(faultsOf(schema, { b: 1 }), [{ pointer: ['a'], message: 'is required' }]);
    assert.deepEqual(faultsOf(schema, { a: 1, b: 1, c: 1 }), [{ pointer: ['c'], message: 'is not a known member' }]);
    assert.deepEqual(faultsOf(schema, { a: 1, b: 'x' })[0]!.pointer, ['b']);
  });

  it('the experiences import file reports a bad kind once, with the values allowed', () => {
    const file = JSON.stringify([{ name: 'summer', title: 'Summer', prizes: [{ ...PRIZE, kind: 'gift' }] }]);
    assert.throws(
      () => parseImportFile(file),
      (error: unknown) => {
        assert.ok(error instanceof DomainError);
        assert.deepEqual(error.errors, [{ path: '0.prizes.0.kind', message: 'must be one of coupon, payment, physical' }]);
        return true;
      },
    );
    const missing = JSON.stringify({ title: 'No name' });
    assert.throws(
      () => parseImportFile(missing),
      (error: unknown) => (error as DomainError).errors?.[0]?.path === '0.name' && (error as DomainError).errors?.[0]?.message === 'is required',
    );
  });
});

for (const dialect of testDialects()) {
  describe(`schema errors in words over HTTP [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let token: string;
    let admin: string;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount();
      token = await t.token(client);
      admin = await t.token(t.operator, 'admin');
    });
    after(() => t.close());

    it('GET /notifications?status=bogus names the statuses allowed, once, at querystring.status', async () => {
      const refused = await api(t.url, 'GET', '/v2/notifications?status=bogus', { token });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body, {
        type: 'https://rewards.dev/problems/bad-request',
        title: 'Bad Request',
        status: 400,
        detail: 'request querystring is invalid: querystring.status must be one of pending, succeeded, failed',
        errors: [{ path: 'querystring.status', message: 'must be one of pending, succeeded, failed' }],
      });
      assert.equal((await api(t.url, 'GET', '/v2/notifications?status=failed', { token })).status, 200);
    });

    it('a prize kind in an experience body: the kinds allowed, for a wrong word or a wrong type', async () => {
      for (const kind of ['gift', 3]) {
        const refused = await api(t.url, 'POST', `/v2/admin/experiences?accountId=${client.accountId}`, { token: admin, body: { name: 'kinds', title: 'K', prizes: [{ ...PRIZE, kind }] } });
        assert.equal(refused.status, 400);
        assert.deepEqual(refused.body.errors, [{ path: 'body.prizes.0.kind', message: 'must be one of coupon, payment, physical' }], String(kind));
      }
    });

    it('a partner event name (an enum): the names allowed', async () => {
      const refused = await api(t.url, 'POST', '/v2/request/req_unknown/events', { token, body: { name: 'pedido-perdido', refId: 'r' } });
      assert.equal(refused.status, 400);
      assert.deepEqual(refused.body.errors, [{ path: 'body.name', message: 'must be one of em-rota-de-entrega, pedido-entregue' }]);
    });
  });
}
