// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeEvent, parseSubscriptionBody, validateCustomHeaders, validateExperiences } from '../../src/domain/subscriptions/validation.js';

describe('subscription validation: event', () => {
  it('accepts the singular and the plural names and stores the singular', () => {
    assert.equal(normalizeEvent('registered-request'), 'registered-request');
    assert.equal(normalizeEvent('registered-requests'), 'registered-request');
    assert.equal(normalizeEvent('processed-request'), 'processed-request');
    assert.equal(normalizeEvent('processed-requests'), 'processed-request');
    assert.equal(normalizeEvent('Processed-Request'), undefined);
    assert.equal(normalizeEvent('pedido-entregue'), undefined);
  });
});

describe('subscription validation: customHeaders', () => {
  it('accepts token names with printable values', () => {
    assert.deepEqual(validateCustomHeaders({ 'X-Api-Key': 'k e y\tvalue', "x!#$%&'*+-.^_`|~9": 'ok', 'X-Latin': 'café' }, 'h'), []);
  });

  it('refuses names that are not HTTP tokens', () => {
    const errors = validateCustomHeaders({ 'X Space': 'a', 'X:Colon': 'b', '': 'c' }, 'h');
    assert.deepEqual(
      errors.map((e) => e.path),
      ['h.X Space', 'h.X:Colon', 'h.'],
    );
    assert.match(errors[0]!.message, /^header name must be an HTTP token/);
  });

  it('refuses the headers the service sets or HTTP forbids, case-insensitively, and every webhook-* header', () => {
    for (const name of [
      'Host',
      'content-length',
      'CONTENT-TYPE',
      'Transfer-Encoding',
      'connection',
      'Authorization',
      'webhook-id',
      'Webhook-Signature',
      'WEBHOOK-anything',
      'User-Agent',
      'X-Webhook-Event',
      'Keep-Alive',
      'Upgrade',
    ]) {
      assert.deepEqual(validateCustomHeaders({ [name]: 'x' }, 'h'), [{ path: `h.${name}`, message: `header ${name} is set by the service and cannot be customised` }], name);
    }
  });

  it('refuses values with CR or LF (header injection) and other control characters', () => {
    assert.deepEqual(validateCustomHeaders({ 'X-A': 'one\r\nX-Injected: two' }, 'h'), [{ path: 'h.X-A', message: 'header value must not contain CR or LF' }]);
    assert.deepEqual(validateCustomHeaders({ 'X-A': 'line\n' }, 'h'), [{ path: 'h.X-A', message: 'header value must not contain CR or LF' }]);
    assert.deepEqual(validateCustomHeaders({ 'X-A': 'nul\u0000' }, 'h'), [{ path: 'h.X-A', message: 'header value may hold only visible characters, spaces and tabs' }]);
  });

  it('refuses the same name twice in different case', () => {
    assert.deepEqual(validateCustomHeaders({ 'X-Key': 'a', 'x-key': 'b' }, 'h'), [{ path: 'h.x-key', message: 'header names are case-insensitive: this header is given twice' }]);
  });

  it('refuses more than 50 headers', () => {
    const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v']));
    assert.deepEqual(validateCustomHeaders(many, 'h'), [{ path: 'h', message: 'must have at most 50 headers' }]);
  });
});

describe('subscription validation: experiences', () => {
  it('accepts up to 100 distinct non-empty names', () => {
    assert.deepEqual(
      validateExperiences(
        Array.from({ length: 100 }, (_, i) => `exp-${i}`),
        'e',
      ),
      [],
    );
    assert.deepEqual(validateExperiences([], 'e'), []);
  });

  it('refuses more than 100, empty or blank names, and repeats', () => {
    assert.deepEqual(
      validateExperiences(
        Array.from({ length: 101 }, (_, i) => `exp-${i}`),
        'e',
      ),
      [{ path: 'e', message: 'must have at most 100 experiences' }],
    );
    assert.deepEqual(validateExperiences(['a', '', '  '], 'e'), [
      { path: 'e.1', message: 'must not be empty' },
      { path: 'e.2', message: 'must not be empty' },
    ]);
    assert.deepEqual(validateExperiences(['a', 'b', 'a'], 'e'), [{ path: 'e.2', message: 'repeats the experience "a"' }]);
  });
});

describe('subscription validation: whole body', () => {
  const owner = { accountId: 'acc_1' };

  it('fills the documented defaults on create', () => {
    const { changes, errors } = parseSubscriptionBody({ event: 'processed-requests', callback: { url: 'https://h.example.com/' } }, 'create', owner);
    assert.deepEqual(errors, []);
    assert.deepEqual(changes, {
      event: 'processed-request',
      description: '',
      active: true,
      experiences: [],
      callback: { url: 'https://h.example.com/', authorization: null, customHeaders: {} },
      rateLimit: null,
    });
  });

  it('requires event and callback on create but not on update', () => {
    assert.deepEqual(
      parseSubscriptionBody({}, 'create', owner).errors.map((e) => e.path),
      ['body.event', 'body.callback'],
    );
    assert.deepEqual(parseSubscriptionBody({}, 'update', { ...owner, id: 'sub_1' }), { changes: {}, errors: [] });
  });

  it('lets a body echo the read-only members but not change them', () => {
    const echoed = parseSubscriptionBody({ _id: 'sub_1', accountId: 'acc_1', createdAt: 'whenever', description: 'd' }, 'update', { ...owner, id: 'sub_1' });
    assert.deepEqual(echoed, { changes: { description: 'd' }, errors: [] });
    const changed = parseSubscriptionBody({ _id: 'sub_2', accountId: 'acc_2' }, 'update', { ...owner, id: 'sub_1' });
    assert.deepEqual(changed.errors, [
      { path: 'body._id', message: 'differs from the subscription in the path' },
      { path: 'body.accountId', message: 'is assigned by the service and cannot be changed' },
    ]);
  });

  it('refuses a description over 500 characters and a malformed callback URL', () => {
    const { errors } = parseSubscriptionBody({ event: 'registered-request', description: 'x'.repeat(501), callback: { url: 'not a url' } }, 'create', owner);
    assert.deepEqual(errors, [
      { path: 'body.description', message: 'must be at most 500 characters' },
      { path: 'body.callback.url', message: 'must be an absolute URL, like https://example.com/webhooks' },
    ]);
  });
});
