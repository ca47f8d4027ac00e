// needs: every-node-line
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { embeddedIPv4, isPublicAddress, resolvePublicAddresses, ForbiddenAddressError } from '../../src/net/address-policy.js';
import { checkCallbackUrl, CallbackUrlError, parseCallbackUrl } from '../../src/net/callback-url.js';
import { createOutbound } from '../../src/worker/outbound/create-outbound.js';

describe('address policy (SSRF guard)', () => {
  it('refuses loopback, private, CGNAT, link-local, metadata and reserved addresses', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::a9fe:a9fe',
      'ff02::1',
    ]) {
      assert.equal(isPublicAddress(address), false, address);
    }
  });

  it('accepts public addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isPublicAddress(address), true, address);
    }
  });

  it('judges IPv6 by block: the IPv4 an address carries decides, however it is spelled', () => {
    // Loopback, spelled the ways a client tried (all accepted before): IPv4-compatible, translated,
    // NAT64 local-use, 6to4, ISATAP-like; then metadata and private addresses inside each carrier.
    for (const address of [
      '::7f00:1',
      '::127.0.0.1',
      '::ffff:0:7f00:1',
      '::ffff:0:127.0.0.1',
      '64:ff9b:1::7f00:1',
      '2002:7f00:1::1',
      '::5efe:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::10.0.0.1',
      '64:ff9b::0a00:0001',
      '2002:c0a8:0101::1',
      '2002:a00:1::',
      '::ffff:0:a9fe:a9fe',
      '::1:2:3',
      '0:0:0:0:0:0:0:1',
      '0000:0000:0000:0000:0000:ffff:7f00:0001',
      'FE80::1',
      'fec0::1',
      '2001::1',
      '2001:db8::1',
      '100::1',
    ]) {
      assert.equal(isPublicAddress(address), false, address);
    }
    for (const address of ['64:ff9b::808:808', '::ffff:0:808:808', '2002:808:808::1', '2a00:1450:4001:800::200e']) {
      assert.equal(isPublicAddress(address), true, address);
    }
    assert.equal(embeddedIPv4('2002:7f00:1::1'), '127.0.0.1');
    assert.equal(embeddedIPv4('::ffff:0:a9fe:a9fe'), '169.254.169.254');
    assert.equal(embeddedIPv4('2606:4700:4700::1111'), undefined);
  });

  it('refuses the IPv6 loopback spellings and the IPv4 ones URL parsing turns into loopback, at save time', async () => {
    for (const url of [
      'http://[::7f00:1]/',
      'http://[::ffff:0:7f00:1]/',
      'http://[64:ff9b:1::7f00:1]/',
      'http://[2002:7f00:1::1]/',
      'http://[::5efe:7f00:1]/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f.1/',
      'http://0x7f000001/',
      'http://127.1/',
      'http://127.0.0.1./',
      'http://localhost./',
      'http://LOCALHOST/',
      'http://sub.localhost/',
    ]) {
      await assert.rejects(checkCallbackUrl(url, false), CallbackUrlError, url);
    }
  });

  it('refuses a host name that resolves to 127.0.0.1 unless private networks are allowed', async () => {
    await assert.rejects(resolvePublicAddresses('localhost', false), ForbiddenAddressError);
    const allowed = await resolvePublicAddresses('localhost', true);
    assert.ok(allowed.some((a) => a.address === '127.0.0.1' || a.address === '::1'));
  });

  it('checks callback URL syntax: scheme, credentials, length', () => {
    assert.throws(() => parseCallbackUrl('ftp://example.com/x'), /http or https/);
    assert.throws(() => parseCallbackUrl('https://user:pw@example.com/x'), /credentials/);
    assert.throws(() => parseCallbackUrl(`https://example.com/${'a'.repeat(2048)}`), /2048/);
    assert.throws(() => parseCallbackUrl('not a url'), /absolute URL/);
    assert.equal(parseCallbackUrl('https://example.com/hook?a=1').hostname, 'example.com');
  });

  it('refuses private literal hosts and localhost at save time', async () => {
    await assert.rejects(checkCallbackUrl('http://127.0.0.1:9000/hook', false), CallbackUrlError);
    await assert.rejects(checkCallbackUrl('http://[::1]/hook', false), CallbackUrlError);
    await assert.rejects(checkCallbackUrl('http://169.254.169.254/latest/meta-data', false), CallbackUrlError);
    await assert.rejects(checkCallbackUrl('http://localhost/hook', false), CallbackUrlError);
    assert.ok(await checkCallbackUrl('http://127.0.0.1:9000/hook', true));
    assert.ok(await checkCallbackUrl('https://8.8.8.8/hook', false));
  });

  it('names the way forward for a local receiver, when saving and in the delivery log', async () => {
    const wayForward = 'for local development, use `rewards listen --forward-to <url>`, or set CALLBACK_ALLOW_PRIVATE_NETWORKS=true on the service';
    await assert.rejects(checkCallbackUrl('http://127.0.0.1:3000/webhooks', false), { message: `host 127.0.0.1 is a loopback, private, link-local or reserved address; ${wayForward}` });
    await assert.rejects(checkCallbackUrl('http://localhost:3000/webhooks', false), { message: `host localhost is loopback; ${wayForward}` });
    await assert.rejects(resolvePublicAddresses('localhost', false), (error: Error) => error.message.endsWith(`a loopback, private, link-local or reserved address; ${wayForward}`));
    const outbound = createOutbound({ callbackTimeoutMs: 5000, callbackAllowPrivateNetworks: false, mtlsCertFile: undefined, mtlsKeyFile: undefined, mtlsCaFile: undefined });
    try {
      const attempt = (url: string) =>
        outbound.deliverAttempt({ url, body: '{}', eventType: 'registered-requests', accountId: 'acc_test', msgId: 'ntf_0123456789', secrets: [`whsec_${Buffer.alloc(32, 7).toString('base64')}`] });
      const literal = await attempt('http://127.0.0.1:3000/webhooks');
      assert.equal(literal.ok, false);
      assert.equal(literal.error, `refused to connect: 127.0.0.1 is a loopback, private, link-local or reserved address; ${wayForward}`);
      const named = await attempt('http://localhost:3000/webhooks');
      assert.match(named.error!, /^refused to connect: localhost resolves to (127\.0\.0\.1|::1), a loopback, private, link-local or reserved address; /);
      assert.ok(named.error!.endsWith(wayForward), named.error);
    } finally {
      await outbound.close();
    }
  });
});
