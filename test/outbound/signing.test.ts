// needs: every-node-line
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { buildWebhookHeaders, signWebhook, SigningSecretError } from '../../src/domain/notifications/signing.js';

const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const newSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

describe('Standard Webhooks signing', () => {
  it('matches the specification test vector', () => {
    const { secret, msgId, timestamp, body } = VECTOR;
    assert.equal(signWebhook({ msgId, timestamp, body, secrets: [secret] }), VECTOR.signature);
  });

  it('matches the official package for the same input', () => {
    const { secret, msgId, timestamp, body } = VECTOR;
    assert.equal(new Webhook(secret).sign(msgId, new Date(timestamp * 1000), body), VECTOR.signature);
  });

  it('builds headers the official package verifies', () => {
    const secret = newSecret();
    const body = JSON.stringify({ id: 'req_1', rewardValue: 30, message: 'olá ✓' });
    const headers = buildWebhookHeaders({ msgId: 'ntf_1', timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
    assert.equal(headers['webhook-id'], 'ntf_1');
    assert.match(headers['webhook-timestamp'], /^\d+$/);
    assert.deepEqual(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body));
  });

  it('signs with every secret during a rotation, and each verifies on its own', () => {
    const [oldSecret, currentSecret] = [newSecret(), newSecret()];
    const body = '{"id":"req_2"}';
    const headers = buildWebhookHeaders({ msgId: 'ntf_2', timestamp: Math.floor(Date.now() / 1000), body, secrets: [currentSecret, oldSecret] });
    const signatures = headers['webhook-signature'].split(' ');
    assert.equal(signatures.length, 2);
    for (const signature of signatures) assert.match(signature, /^v1,[A-Za-z0-9+/]+=*$/);
    for (const secret of [oldSecret, currentSecret]) assert.ok(new Webhook(secret).verify(body, { ...headers }));
    assert.throws(() => new Webhook(newSecret()).verify(body, { ...headers }));
  });

  it('a changed body byte no longer verifies', () => {
    const secret = newSecret();
    const body = '{"id":"req_3","rewardValue":10}';
    const headers = buildWebhookHeaders({ msgId: 'ntf_3', timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] });
    assert.throws(() => new Webhook(secret).verify(body.replace('10', '11'), { ...headers }));
  });

  it('refuses no secret, malformed secrets and ambiguous ids', () => {
    const base = { msgId: 'ntf_4', timestamp: 1, body: '{}' };
    assert.throws(() => signWebhook({ ...base, secrets: [] }), SigningSecretError);
    assert.throws(() => signWebhook({ ...base, secrets: ['whsec_not base64!'] }), SigningSecretError);
    assert.throws(() => signWebhook({ ...base, secrets: ['whsec_c2hvcnQ='] }), /at least 16 bytes/);
    assert.throws(() => signWebhook({ ...base, msgId: 'a.b', secrets: [newSecret()] }), SigningSecretError);
    assert.throws(() => signWebhook({ ...base, timestamp: 1.5, secrets: [newSecret()] }), SigningSecretError);
  });
});
