// needs: database
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testDialects } from '../support/databases.js';
import { api, startTestApp, type TestApp } from '../support/test-app.js';

/** What every refusal of a loopback or private callback address tells the user to do instead. */
const LOCAL_DEVELOPMENT = 'for local development, use `rewards listen --forward-to <url>`, or set CALLBACK_ALLOW_PRIVATE_NETWORKS=true on the service';

const valid = { event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook' } };
const withCallback = (callback: object) => ({ event: 'registered-request', callback: { url: 'http://127.0.0.1:9/hook', ...callback } });

/** The exact problem document of a 400 about one member. */
function badRequest(path: string, message: string, detailPrefix = 'request body is invalid') {
  return {
    type: 'https://rewards.dev/problems/bad-request',
    title: 'Bad Request',
    status: 400,
    detail: `${detailPrefix}: ${path} ${message}`,
    errors: [{ path, message }],
  };
}

for (const dialect of testDialects()) {
  describe(`subscriptions validation [${dialect}]`, () => {
    let t: TestApp;
    let token: string;
    let existing: string;
    before(async () => {
      t = await startTestApp(dialect);
      token = await t.token(await t.createClientAccount());
      existing = (await api(t.url, 'POST', '/v2/subscriptions', { token, body: valid })).body._id;
    });
    after(() => t.close());

    const post = (body: unknown) => api(t.url, 'POST', '/v2/subscriptions', { token, body });

    const cases: [string, unknown, string, string][] = [
      [
        'event is required',
        { callback: valid.callback },
        'body.event',
        'is required: one of registered-request, registered-requests, processed-request, processed-requests, disabled-subscription, disabled-subscriptions, failed-notification, failed-notifications, endpoint-circuit, endpoint-circuits',
      ],
      [
        'event must be a known name',
        { ...valid, event: 'pedido-entregue' },
        'body.event',
        'must be one of registered-request, registered-requests, processed-request, processed-requests, disabled-subscription, disabled-subscriptions, failed-notification, failed-notifications, endpoint-circuit, endpoint-circuits',
      ],
      ['callback is required', { event: 'registered-request' }, 'body.callback', 'is required: an object with at least url'],
      ['callback.url is required', { event: 'registered-request', callback: {} }, 'body.callback.url', 'is required'],
      ['unknown members are refused', { ...valid, colour: 'blue' }, 'body.colour', 'is not a known member'],
      ['unknown callback members are refused', withCallback({ headers: {} }), 'body.callback.headers', 'is not a known member'],
      ['unknown authorization members are refused', withCallback({ authorization: { Digest: 'x' } }), 'body.callback.authorization.Digest', 'is not a known member'],
      ['active must be a boolean, not "true"', { ...valid, active: 'true' }, 'body.active', 'must be a boolean'],
      ['experiences must be an array', { ...valid, experiences: 'summer' }, 'body.experiences', 'must be an array'],
      ['description ≤ 500 characters', { ...valid, description: 'd'.repeat(501) }, 'body.description', 'must NOT have more than 500 characters'],
      ['at most 100 experiences', { ...valid, experiences: Array.from({ length: 101 }, (_, i) => `e${i}`) }, 'body.experiences', 'must NOT have more than 100 items'],
      ['experiences are unique', { ...valid, experiences: ['a', 'a'] }, 'body.experiences.1', 'repeats the experience "a"'],
      ['experiences are non-empty', { ...valid, experiences: ['a', ''] }, 'body.experiences.1', 'must not be empty'],
      ['experiences are strings', { ...valid, experiences: [1] }, 'body.experiences.0', 'must be a string'],
      ['callback.url must be http(s)', withCallback({ url: 'ftp://127.0.0.1/x' }), 'body.callback.url', 'must use http or https'],
      ['callback.url must be absolute', withCallback({ url: '/relative/hook' }), 'body.callback.url', 'must be an absolute URL, like https://example.com/webhooks'],
      ['callback.url carries no credentials', withCallback({ url: 'https://user:pw@127.0.0.1/x' }), 'body.callback.url', 'must not carry credentials; use callback.authorization'],
      ['callback.url ≤ 2048 characters', withCallback({ url: `http://127.0.0.1/${'a'.repeat(2049)}` }), 'body.callback.url', 'must be at most 2048 characters'],
      ['customHeaders values are strings', withCallback({ customHeaders: { 'X-N': 1 } }), 'body.callback.customHeaders.X-N', 'must be a string'],
      [
        'customHeaders names are HTTP tokens',
        withCallback({ customHeaders: { 'X Bad': 'v' } }),
        'body.callback.customHeaders.X Bad',
        "header name must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~), at most 256 characters",
      ],
      [
        'customHeaders refuses Authorization',
        withCallback({ customHeaders: { authorization: 'v' } }),
        'body.callback.customHeaders.authorization',
        'header authorization is set by the service and cannot be customised',
      ],
      [
        'customHeaders refuses Content-Type',
        withCallback({ customHeaders: { 'Content-Type': 'text/plain' } }),
        'body.callback.customHeaders.Content-Type',
        'header Content-Type is set by the service and cannot be customised',
      ],
      [
        'customHeaders refuses webhook-*',
        withCallback({ customHeaders: { 'Webhook-Signature': 'v1,x' } }),
        'body.callback.customHeaders.Webhook-Signature',
        'header Webhook-Signature is set by the service and cannot be customised',
      ],
      ['customHeaders values have no CR/LF', withCallback({ customHeaders: { 'X-A': 'a\r\nX-B: b' } }), 'body.callback.customHeaders.X-A', 'header value must not contain CR or LF'],
      [
        'Basic is base64 of user:password',
        withCallback({ authorization: { Basic: 'user:password' } }),
        'body.callback.authorization.Basic',
        'must be the base64 encoding of "user:password", optionally prefixed with "Basic "',
      ],
      [
        'Bearer is a token',
        withCallback({ authorization: { Bearer: 'two words' } }),
        'body.callback.authorization.Bearer',
        'must be a token of letters, digits and -._~+/ (RFC 6750), optionally prefixed with "Bearer "',
      ],
      [
        'one Authorization-header method at most',
        withCallback({ authorization: { Bearer: 'token', Basic: Buffer.from('a:b').toString('base64') } }),
        'body.callback.authorization',
        'Basic, Bearer, oauth2 and mtls.twoFactor.oauth2 each set the Authorization header: give at most one (mtls combines with any one)',
      ],
      ['oauth2 needs client_secret', withCallback({ authorization: { oauth2: { client_id: 'c', url: 'http://127.0.0.1/t' } } }), 'body.callback.authorization.oauth2.client_secret', 'is required'],
      [
        'oauth2.url follows the callback URL rules',
        withCallback({ authorization: { oauth2: { client_id: 'c', client_secret: 's', url: 'file:///etc/passwd' } } }),
        'body.callback.authorization.oauth2.url',
        'must use http or https',
      ],
      [
        'mtls.twoFactor.oauth2 is checked like oauth2',
        withCallback({ authorization: { mtls: { twoFactor: { oauth2: { client_id: 'c', client_secret: 's', url: 'http://127.0.0.1/t', scope: 'x' } } } } }),
        'body.callback.authorization.mtls.twoFactor.oauth2.scope',
        'is not a known member',
      ],
      [
        'a masked secret cannot create',
        withCallback({ authorization: { Bearer: '****abcd' } }),
        'body.callback.authorization.Bearer',
        'is a masked value that matches no stored secret; send the full secret',
      ],
      ['_id is assigned by the service', { ...valid, _id: 'sub_mine' }, 'body._id', 'is assigned by the service; leave it out'],
    ];
    for (const [rule, body, path, message] of cases) {
      it(`POST: ${rule}`, async () => {
        const response = await post(body);
        assert.equal(response.status, 400);
        assert.equal(response.headers.get('content-type'), 'application/problem+json; charset=utf-8');
        assert.deepEqual(response.body, badRequest(path, message));
      });
    }

    it('PUT applies the same rules to the members it carries', async () => {
      const response = await api(t.url, 'PUT', `/v2/subscriptions/${existing}`, { token, body: { event: 'registered', experiences: [''] } });
      assert.equal(response.status, 400);
      assert.deepEqual(response.body.errors, [
        {
          path: 'body.event',
          message:
            'must be one of registered-request, registered-requests, processed-request, processed-requests, disabled-subscription, disabled-subscriptions, failed-notification, failed-notifications, endpoint-circuit, endpoint-circuits',
        },
        { path: 'body.experiences.0', message: 'must not be empty' },
      ]);
      const moved = await api(t.url, 'PUT', `/v2/subscriptions/${existing}`, { token, body: { _id: 'sub_other' } });
      assert.deepEqual(moved.body, badRequest('body._id', 'differs from the subscription in the path'));
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${existing}`, { token })).body.event, 'registered-request');
    });

    it('reports every domain rule broken at once', async () => {
      const response = await post({ event: 'nope', description: 'x'.repeat(10), callback: { url: 'gopher://x', customHeaders: { Host: 'h' } } });
      assert.deepEqual(
        response.body.errors.map((e: { path: string }) => e.path),
        ['body.event', 'body.callback.url', 'body.callback.customHeaders.Host'],
      );
    });

    it('list filters are validated', async () => {
      const active = await api(t.url, 'GET', '/v2/subscriptions?active=maybe', { token });
      assert.deepEqual(active.body, badRequest('querystring.active', 'must be a boolean', 'request querystring is invalid'));
      const event = await api(t.url, 'GET', '/v2/subscriptions?event=other', { token });
      assert.deepEqual(
        event.body,
        badRequest(
          'querystring.event',
          'must be one of registered-request, registered-requests, processed-request, processed-requests, disabled-subscription, disabled-subscriptions, failed-notification, failed-notifications, endpoint-circuit, endpoint-circuits',
          'request querystring is invalid',
        ),
      );
    });

    it('malformed JSON is a 400, a non-JSON body a 415, a body over 1 MiB a 413', async () => {
      const malformed = await api(t.url, 'POST', '/v2/subscriptions', { token, body: '{"event":', headers: { 'content-type': 'application/json' } });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.detail, 'request body is not valid JSON: the body ends early at line 1, column 10');
      const text = await api(t.url, 'POST', '/v2/subscriptions', { token, body: '<event/>', headers: { 'content-type': 'application/xml' } });
      assert.equal(text.status, 415);
      const huge = await post({ ...valid, description: 'x'.repeat(1024 * 1024) });
      assert.equal(huge.status, 413);
      assert.equal(huge.body.title, 'Content Too Large');
      const array = await post([valid]);
      assert.deepEqual(array.body, badRequest('body', 'must be an object'));
    });
  });

  describe(`subscriptions callback address policy [${dialect}]`, () => {
    let t: TestApp;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect, { CALLBACK_ALLOW_PRIVATE_NETWORKS: 'false' });
      token = await t.token(await t.createClientAccount());
    });
    after(() => t.close());

    const refused: [string, string][] = [
      ['http://127.0.0.1/hook', `host 127.0.0.1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://localhost:8080/hook', `host localhost is loopback; ${LOCAL_DEVELOPMENT}`],
      ['http://[::1]/hook', `host ::1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['https://10.1.2.3/hook', `host 10.1.2.3 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['https://192.168.0.10/hook', `host 192.168.0.10 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://169.254.169.254/latest/meta-data', `host 169.254.169.254 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['https://100.64.0.1/hook', `host 100.64.0.1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['https://[::ffff:10.0.0.1]/hook', `host ::ffff:a00:1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      // Loopback inside IPv6 carriers, accepted before the policy judged addresses by block.
      ['http://[::7f00:1]/', `host ::7f00:1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://[::ffff:0:7f00:1]/', `host ::ffff:0:7f00:1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://[64:ff9b:1::7f00:1]/', `host 64:ff9b:1::7f00:1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://[2002:7f00:1::1]/', `host 2002:7f00:1::1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://[::5efe:7f00:1]/', `host ::5efe:7f00:1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      // IPv4 spellings the URL parser turns into 127.0.0.1, and a trailing-dot host name.
      ['http://2130706433/hook', `host 127.0.0.1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://0x7f.1/hook', `host 127.0.0.1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://0177.0.0.1/hook', `host 127.0.0.1 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`],
      ['http://localhost./hook', `host localhost is loopback; ${LOCAL_DEVELOPMENT}`],
      // A name that does not resolve (.invalid never does, RFC 6761): what to check.
      ['https://hooks.example.invalid/hook', 'host hooks.example.invalid does not resolve; check its spelling and that it is in public DNS (the service looks it up when saving)'],
    ];
    for (const [url, message] of refused) {
      it(`refuses ${url}`, async () => {
        const response = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url } } });
        assert.equal(response.status, 400);
        assert.deepEqual(response.body, badRequest('body.callback.url', message));
      });
    }

    it('checks OAuth2 token URLs too, on create and on update', async () => {
      const sixToFour = await api(t.url, 'POST', '/v2/subscriptions', {
        token,
        body: {
          event: 'registered-request',
          callback: { url: 'https://93.184.216.34/hook', authorization: { oauth2: { client_id: 'c', client_secret: 's', url: 'http://[2002:a9fe:a9fe::]/token' } } },
        },
      });
      assert.deepEqual(sixToFour.body, badRequest('body.callback.authorization.oauth2.url', `host 2002:a9fe:a9fe:: is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`));
      const authorization = { oauth2: { client_id: 'c', client_secret: 's', url: 'http://10.0.0.5/token' } };
      const created = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'https://93.184.216.34/hook', authorization } } });
      assert.deepEqual(created.body, badRequest('body.callback.authorization.oauth2.url', `host 10.0.0.5 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`));
      const ok = await api(t.url, 'POST', '/v2/subscriptions', { token, body: { event: 'registered-request', callback: { url: 'https://93.184.216.34/hook' } } });
      assert.equal(ok.status, 201, 'a public address is accepted (nothing is contacted when saving)');
      const moved = await api(t.url, 'PUT', `/v2/subscriptions/${ok.body._id}`, {
        token,
        body: { callback: { url: 'https://93.184.216.34/hook', authorization: { mtls: { twoFactor: authorization } } } },
      });
      assert.deepEqual(moved.body, badRequest('body.callback.authorization.mtls.twoFactor.oauth2.url', `host 10.0.0.5 is a loopback, private, link-local or reserved address; ${LOCAL_DEVELOPMENT}`));
      const privateUpdate = await api(t.url, 'PUT', `/v2/subscriptions/${ok.body._id}`, { token, body: { callback: { url: 'http://127.0.0.2/' } } });
      assert.equal(privateUpdate.status, 400);
      assert.equal((await api(t.url, 'GET', `/v2/subscriptions/${ok.body._id}`, { token })).body.callback.url, 'https://93.184.216.34/hook');
    });
  });
}
