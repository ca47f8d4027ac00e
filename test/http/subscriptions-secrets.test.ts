// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadDeliveryTarget, loadSigningSecrets } from '../../src/services/delivery-targets.js';
import { listSubscriptionsForEvent } from '../../src/storage/repositories/subscriptions.js';
import { ROTATION_GRACE_MS } from '../../src/services/signing-secrets.js';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type ClientCredentials, type TestApp } from '../support/test-app.js';

const BASIC = Buffer.from('receiver:pa55-w0rd-for-callbacks').toString('base64');
const BEARER = 'bearer-secret-value-QRST';
const OAUTH_SECRET = 'oauth2-client-secret-WXYZ';
const MTLS_OAUTH_SECRET = 'mtls-oauth2-secret-LMNO';
const oauth2 = { client_id: 'receiver-client', client_secret: OAUTH_SECRET, url: 'http://127.0.0.1:9/oauth/token', audience: 'https://receiver.example.com' };

for (const dialect of testDialects()) {
  describe(`subscription secrets [${dialect}]`, () => {
    let t: TestApp;
    let client: ClientCredentials;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect);
      client = await t.createClientAccount();
      token = await t.token(client);
    });
    after(() => t.close());

    const create = (authorization: object, extra: object = {}) =>
      api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-request', callback: { url: 'http://127.0.0.1:9/hook', authorization }, ...extra } });

    it('stores callback secrets encrypted: no stored column contains them', async () => {
      const ids = [
        (await create({ Basic: BASIC })).body._id,
        (await create({ Bearer: BEARER })).body._id,
        (await create({ oauth2 })).body._id,
        (await create({ mtls: { twoFactor: { oauth2: { ...oauth2, client_secret: MTLS_OAUTH_SECRET } } } })).body._id,
      ];
      const rows = await t.deps.db.selectFrom('subscriptions').selectAll().where('id', 'in', ids).execute();
      assert.equal(rows.length, 4);
      const stored = JSON.stringify(rows);
      for (const secret of [BASIC, BEARER, OAUTH_SECRET, MTLS_OAUTH_SECRET, 'pa55-w0rd-for-callbacks', 'receiver-client']) {
        assert.equal(stored.includes(secret), false, `found ${secret} in the stored rows`);
      }
      for (const row of rows) assert.match(row.callback_authorization_encrypted!, /^v1\./);
      // The API and the delivery engine still get the real values back.
      const target = await loadDeliveryTarget(t.deps.db, t.deps.box, ids[3]);
      assert.equal(target?.authorization?.mtls?.twoFactor?.oauth2?.client_secret, MTLS_OAUTH_SECRET);
    });

    it('stores signing secrets encrypted', async () => {
      const created = (await create({})).body;
      const rows = await t.deps.db.selectFrom('webhook_signing_secrets').selectAll().where('subscription_id', '=', created._id).execute();
      assert.equal(rows.length, 1);
      assert.equal(JSON.stringify(rows).includes(created.secret.slice('whsec_'.length)), false);
    });

    it('returns secrets masked as "****" + last 4 on create, read, list and update', async () => {
      const masked = { Bearer: '****QRST' };
      const created = await create({ Bearer: `Bearer ${BEARER}` });
      assert.deepEqual(created.body.callback.authorization, masked);
      assert.deepEqual((await api(t.url, 'GET', `/v2/subscriptions/${created.body._id}`, { token })).body.callback.authorization, masked);
      const listed = (await api(t.url, 'GET', '/v2/subscriptions', { token })).body.find((s: { _id: string }) => s._id === created.body._id);
      assert.deepEqual(listed.callback.authorization, masked);
      const text = JSON.stringify((await api(t.url, 'GET', '/v2/subscriptions', { token })).body);
      for (const secret of [BASIC, BEARER, OAUTH_SECRET, MTLS_OAUTH_SECRET]) assert.equal(text.includes(secret), false);
    });

    it('a masked value sent back keeps the stored secret (GET, edit, PUT round trip)', async () => {
      const created = (await create({ oauth2 })).body;
      const fetched = (await api(t.url, 'GET', `/v2/subscriptions/${created._id}`, { token })).body;
      assert.equal(fetched.callback.authorization.oauth2.client_secret, '****WXYZ');
      // The whole GET document goes back, read-only members and masked secret included.
      const echo = structuredClone(fetched);
      echo.description = 'edited after GET';
      echo.callback.authorization.oauth2.audience = 'https://other-audience.example.com';
      const updated = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: echo });
      assert.equal(updated.status, 200);
      assert.equal(updated.body.description, 'edited after GET');
      assert.deepEqual(updated.body.callback.authorization.oauth2, { ...oauth2, client_secret: '****WXYZ', audience: 'https://other-audience.example.com' });
      const target = await loadDeliveryTarget(t.deps.db, t.deps.box, created._id);
      assert.deepEqual(target?.authorization, { oauth2: { ...oauth2, audience: 'https://other-audience.example.com' } });
    });

    it('a new secret replaces the stored one; a masked value that does not match is a 400', async () => {
      const created = (await create({ Bearer: BEARER })).body;
      const wrong = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { callback: { url: 'http://127.0.0.1:9/hook', authorization: { Bearer: '****AAAA' } } } });
      assert.equal(wrong.status, 400);
      assert.deepEqual(wrong.body.errors, [{ path: 'body.callback.authorization.Bearer', message: 'is a masked value that matches no stored secret; send the full secret' }]);
      const moved = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { callback: { url: 'http://127.0.0.2:9/hook', authorization: { Bearer: '****QRST' } } } });
      assert.deepEqual(moved.body.errors, [
        { path: 'body.callback.authorization.Bearer', message: 'is masked but callback.url, where it is sent, moved to another origin; send the full secret again' },
      ]);
      const replaced = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, {
        token,
        body: { callback: { url: 'http://127.0.0.2:9/hook', authorization: { Bearer: 'brand-new-token-1111' } } },
      });
      assert.deepEqual(replaced.body.callback.authorization, { Bearer: '****1111' });
      assert.equal((await loadDeliveryTarget(t.deps.db, t.deps.box, created._id))?.authorization?.Bearer, 'brand-new-token-1111');
    });

    it('every stored credential is bound to the callback origin it was saved with: an echoed mask cannot follow a move, the secret sent again can', async () => {
      const other = 'http://127.0.0.2:9/hook';
      const forms: Array<{ member: string; authorization: object; resent: object; tokenGoesTo?: string }> = [
        { member: 'Basic', authorization: { Basic: BASIC }, resent: { Basic: BASIC } },
        { member: 'Bearer', authorization: { Bearer: BEARER }, resent: { Bearer: BEARER } },
        { member: 'oauth2.client_secret', authorization: { oauth2 }, resent: { oauth2 }, tokenGoesTo: 'the tokens it obtains' },
        {
          member: 'mtls.twoFactor.oauth2.client_secret',
          authorization: { mtls: { twoFactor: { oauth2: { ...oauth2, client_secret: MTLS_OAUTH_SECRET } } } },
          resent: { mtls: { twoFactor: { oauth2: { ...oauth2, client_secret: MTLS_OAUTH_SECRET } } } },
          tokenGoesTo: 'the tokens it obtains',
        },
      ];
      for (const form of forms) {
        const created = (await create(form.authorization)).body;
        const echoed = (await api(t.url, 'GET', `/v2/subscriptions/${created._id}`, { token })).body;
        // The whole GET document back, masked secret included, with only the callback's origin changed.
        const moved = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { ...echoed, callback: { ...echoed.callback, url: other } } });
        assert.equal(moved.status, 400, form.member);
        const where = form.tokenGoesTo ? `where ${form.tokenGoesTo} are sent` : 'where it is sent';
        assert.deepEqual(
          moved.body.errors,
          [{ path: `body.callback.authorization.${form.member}`, message: `is masked but callback.url, ${where}, moved to another origin; send the full secret again` }],
          form.member,
        );
        assert.equal((await loadDeliveryTarget(t.deps.db, t.deps.box, created._id))?.url, 'http://127.0.0.1:9/hook', `${form.member}: nothing changed`);
        // Another path on the same origin keeps the stored secret.
        const samePlace = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { ...echoed, callback: { ...echoed.callback, url: 'http://127.0.0.1:9/other-path' } } });
        assert.equal(samePlace.status, 200, form.member);
        // Whoever knows the secret may move it.
        const resent = await api(t.url, 'PUT', `/v2/subscriptions/${created._id}`, { token, body: { callback: { url: other, authorization: form.resent } } });
        assert.equal(resent.status, 200, form.member);
        assert.equal((await loadDeliveryTarget(t.deps.db, t.deps.box, created._id))?.url, other);
      }
    });

    it('shows the signing secret on creation and at GET …/secret; rotation keeps the old one signing for 24 h', async () => {
      // A URL of its own: the first subscription there gets a new secret (docs/subscriptions.md, "Signing secrets").
      const created = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'processed-request', callback: { url: 'http://127.0.0.1:9/shown-on-creation' } } })).body;
      const read = await api(t.url, 'GET', `/v2/subscriptions/${created._id}/secret`, { token });
      assert.equal(read.status, 200);
      assert.deepEqual(read.body, { secret: created.secret, createdAt: created.createdAt });

      const rotated = await api(t.url, 'POST', `/v2/subscriptions/${created._id}/secret/rotate`, { token });
      assert.equal(rotated.status, 200);
      assert.match(rotated.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.notEqual(rotated.body.secret, created.secret);
      const rotatedAt = Date.parse(rotated.body.createdAt);
      assert.equal(Date.parse(rotated.body.previousSecretExpiresAt), rotatedAt + ROTATION_GRACE_MS);
      assert.deepEqual((await api(t.url, 'GET', `/v2/subscriptions/${created._id}/secret`, { token })).body, rotated.body);

      const signing = await loadSigningSecrets(t.deps.db, t.deps.box, { subscriptionId: created._id }, rotatedAt + 1);
      assert.deepEqual(
        signing.map((s) => s.secret),
        [rotated.body.secret, created.secret],
      );
      const dayLater = await loadSigningSecrets(t.deps.db, t.deps.box, { subscriptionId: created._id }, rotatedAt + ROTATION_GRACE_MS);
      assert.deepEqual(
        dayLater.map((s) => s.secret),
        [rotated.body.secret],
      );
    });

    it('a second rotation ends the first one’s grace period: at most two secrets sign', async () => {
      const created = (await create({})).body;
      const first = (await api(t.url, 'POST', `/v2/subscriptions/${created._id}/secret/rotate`, { token })).body;
      const second = (await api(t.url, 'POST', `/v2/subscriptions/${created._id}/secret/rotate`, { token })).body;
      const signing = await loadSigningSecrets(t.deps.db, t.deps.box, { subscriptionId: created._id }, Date.parse(second.createdAt) + 1);
      assert.deepEqual(
        signing.map((s) => s.secret),
        [second.secret, first.secret],
      );
    });

    it('a rotation takes an overlap from 0m to 7d: the replaced secret signs that long, and the answer says until when', async () => {
      const HOUR = 3_600_000;
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/h' } } })).body;
      await api(t.url, 'GET', '/v2/signing-secret', { token: own }); // the account default exists before its first rotation
      const routes = [
        { rotate: `/v2/subscriptions/${sub._id}/secret/rotate`, read: `/v2/subscriptions/${sub._id}/secret`, owner: { subscriptionId: sub._id as string } },
        { rotate: '/v2/signing-secret/rotate', read: '/v2/signing-secret', owner: { accountId: account.accountId } },
      ];
      for (const { rotate, read, owner } of routes) {
        for (const [body, overlapMs] of [
          [{ overlap: '1h' }, HOUR],
          [{ overlap: '90m' }, 1.5 * HOUR],
          [{ overlap: '7d' }, 7 * 24 * HOUR],
          [{}, ROTATION_GRACE_MS],
        ] as const) {
          const before = (await api(t.url, 'GET', read, { token: own })).body.secret;
          const rotated = await api(t.url, 'POST', rotate, { token: own, body });
          assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
          const at = Date.parse(rotated.body.createdAt);
          assert.equal(Date.parse(rotated.body.previousSecretExpiresAt), at + overlapMs, `${rotate} ${JSON.stringify(body)}`);
          assert.deepEqual((await api(t.url, 'GET', read, { token: own })).body, rotated.body);
          assert.deepEqual(
            (await loadSigningSecrets(t.deps.db, t.deps.box, owner, at + overlapMs - 1)).map((s) => s.secret),
            [rotated.body.secret, before],
          );
          assert.deepEqual(
            (await loadSigningSecrets(t.deps.db, t.deps.box, owner, at + overlapMs)).map((s) => s.secret),
            [rotated.body.secret],
          );
        }
        // 0m: the replaced secret stops at once, and so does one still inside an earlier overlap.
        const graced = (await api(t.url, 'POST', rotate, { token: own, body: { overlap: '24h' } })).body;
        const now = await api(t.url, 'POST', rotate, { token: own, body: { overlap: '0m' } });
        assert.equal(now.status, 200);
        assert.notEqual(now.body.secret, graced.secret);
        assert.equal(now.body.previousSecretExpiresAt, now.body.createdAt, 'the answer says it stopped signing at the rotation');
        assert.deepEqual((await api(t.url, 'GET', read, { token: own })).body, { secret: now.body.secret, createdAt: now.body.createdAt });
        assert.deepEqual(
          (await loadSigningSecrets(t.deps.db, t.deps.box, owner, Date.parse(now.body.createdAt))).map((s) => s.secret),
          [now.body.secret],
        );
      }
    });

    it('an overlap that is not a duration from 0m to 7d is a 400 naming body.overlap, in words; nothing rotates', async () => {
      const created = (await create({})).body;
      const words = 'must be a duration from 0m (now) to 7d, like 1h or 3d';
      const cases: Array<[unknown, string, string]> = [
        [{ overlap: '8d' }, 'body.overlap', words],
        [{ overlap: '169h' }, 'body.overlap', words],
        [{ overlap: '-1h' }, 'body.overlap', words],
        [{ overlap: '1 hour' }, 'body.overlap', words],
        [{ overlap: '10' }, 'body.overlap', words],
        [{ overlap: '' }, 'body.overlap', words],
        [{ overlap: 'forever' }, 'body.overlap', words],
        [{ overlap: 3600 }, 'body.overlap', 'must be a string'],
        [{ overlap: null }, 'body.overlap', 'must be a string'],
        [{ overlapp: '1h' }, 'body.overlapp', 'is not a known member'],
      ];
      for (const path of [`/v2/subscriptions/${created._id}/secret/rotate`, '/v2/signing-secret/rotate']) {
        const read = path.replace('/rotate', '');
        const before = (await api(t.url, 'GET', read, { token })).body;
        for (const [body, at, message] of cases) {
          const refused = await api(t.url, 'POST', path, { token, body });
          assert.equal(refused.status, 400, `${path} ${JSON.stringify(body)}`);
          assert.deepEqual(refused.body.errors, [{ path: at, message }], `${path} ${JSON.stringify(body)}`);
          assert.equal(refused.body.detail, `request body is invalid: ${at} ${message}`);
        }
        assert.deepEqual((await api(t.url, 'GET', read, { token })).body, before, `${path}: nothing rotated`);
      }
    });

    it('the account default secret is created on first read, stable, and rotatable', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const first = await api(t.url, 'GET', '/v2/signing-secret', { token: own });
      assert.equal(first.status, 200);
      assert.match(first.body.secret, /^whsec_/);
      assert.deepEqual((await api(t.url, 'GET', '/v1/signing-secret', { token: own })).body, first.body);
      const fromEngine = await loadSigningSecrets(t.deps.db, t.deps.box, { accountId: account.accountId });
      assert.deepEqual(
        fromEngine.map((s) => s.secret),
        [first.body.secret],
      );

      const rotated = await api(t.url, 'POST', '/v2/signing-secret/rotate', { token: own });
      assert.equal(rotated.status, 200);
      assert.notEqual(rotated.body.secret, first.body.secret);
      const signing = await loadSigningSecrets(t.deps.db, t.deps.box, { accountId: account.accountId }, Date.parse(rotated.body.createdAt) + 1);
      assert.deepEqual(
        signing.map((s) => s.secret),
        [rotated.body.secret, first.body.secret],
      );
      // Subscriptions' secrets are not the account default.
      const sub = (await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/h' } } })).body;
      assert.equal(
        signing.some((s) => s.secret === sub.secret),
        false,
      );
    });

    it('concurrent first uses of the account default agree on one secret', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const [fromApi, ...fromEngine] = await Promise.all([
        api(t.url, 'GET', '/v2/signing-secret', { token: own }),
        ...Array.from({ length: 5 }, () => loadSigningSecrets(t.deps.db, t.deps.box, { accountId: account.accountId })),
      ]);
      const secrets = new Set([(fromApi as { body: { secret: string } }).body.secret, ...(fromEngine as { secret: string }[][]).map((list) => list[0]!.secret)]);
      assert.equal(secrets.size, 1);
      const rows = await t.deps.db.selectFrom('webhook_signing_secrets').select('id').where('account_id', '=', account.accountId).where('subscription_id', 'is', null).execute();
      assert.equal(rows.length, 1);
    });

    it('concurrent rotations leave exactly one current secret', async () => {
      const created = (await create({})).body;
      const results = await Promise.all(Array.from({ length: 4 }, () => api(t.url, 'POST', `/v2/subscriptions/${created._id}/secret/rotate`, { token })));
      assert.deepEqual(
        results.map((r) => r.status),
        [200, 200, 200, 200],
      );
      const current = await t.deps.db.selectFrom('webhook_signing_secrets').select('id').where('subscription_id', '=', created._id).where('expires_at', 'is', null).execute();
      assert.equal(current.length, 1);
      const last = (await api(t.url, 'GET', `/v2/subscriptions/${created._id}/secret`, { token })).body.secret;
      assert.ok(results.some((r) => r.body.secret === last));
    });

    it('the delivery engine can route by event, inactive subscriptions included', async () => {
      const account = await t.createClientAccount();
      const own = await t.token(account);
      const make = async (body: object) =>
        (await api(t.url, 'POST', '/v2/subscriptions', { token: own, body: { callback: { url: 'http://127.0.0.1:9/h', customHeaders: { 'X-Shop': '42' } }, ...body } })).body._id as string;
      const general = await make({ event: 'registered-requests' });
      const skipped = await make({ event: 'registered-request', experiences: ['quiet'], active: false });
      await make({ event: 'processed-request' });
      assert.deepEqual(await listSubscriptionsForEvent(t.deps.db, account.accountId, 'registered-request'), [
        { id: general, active: true, experiences: [], url: 'http://127.0.0.1:9/h' },
        { id: skipped, active: false, experiences: ['quiet'], url: 'http://127.0.0.1:9/h' },
      ]);
      assert.deepEqual(await loadDeliveryTarget(t.deps.db, t.deps.box, general), {
        subscriptionId: general,
        accountId: account.accountId,
        event: 'registered-request',
        active: true,
        url: 'http://127.0.0.1:9/h',
        authorization: null,
        customHeaders: { 'X-Shop': '42' },
        rateLimit: null,
      });
      assert.equal(await loadDeliveryTarget(t.deps.db, t.deps.box, 'sub_unknown'), undefined);
    });
  });
}
