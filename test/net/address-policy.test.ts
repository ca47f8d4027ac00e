import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPublicAddress, resolvePublicAddresses, ForbiddenAddressError } from '../../src/net/address-policy.js';
import { checkCallbackUrl, CallbackUrlError, parseCallbackUrl } from '../../src/net/callback-url.js';

describe('address policy (SSRF guard)', () => {
  it('refuses loopback, private, CGNAT, link-local, metadata and reserved addresses', () => {
    for (const address of [
      '127.0.0.1', '127.1.2.3', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1',
      '169.254.169.254', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1',
      'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', 'ff02::1',
    ]) {
      assert.equal(isPublicAddress(address), false, address);
    }
  });

  it('accepts public addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      assert.equal(isPublicAddress(address), true, address);
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
});
