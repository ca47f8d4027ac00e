import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Addresses a callback may never reach unless CALLBACK_ALLOW_PRIVATE_NETWORKS=true: loopback,
 * private, CGNAT, link-local (cloud metadata lives at 169.254.169.254 and fd00:ec2::254),
 * unspecified, documentation, benchmarking, multicast and reserved ranges.
 */
const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['2001::', 23],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/** IPv4 carried inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`) is judged as IPv4. */
function embeddedIPv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  return undefined;
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const v4 = embeddedIPv4(address);
    if (v4) return !BLOCKED.check(v4, 'ipv4');
    return !BLOCKED.check(address, 'ipv6');
  }
  return !BLOCKED.check(address, 'ipv4');
}

export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_CALLBACK_ADDRESS_FORBIDDEN';
  constructor(readonly hostname: string, readonly address: string) {
    super(`${hostname} resolves to ${address}, a loopback, private, link-local or reserved address`);
    this.name = 'ForbiddenAddressError';
  }
}

/** Resolves a host name and refuses it when any of its addresses is not public. */
export async function resolvePublicAddresses(hostname: string, allowPrivate: boolean): Promise<LookupAddress[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses: LookupAddress[] = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await new Promise((resolve, reject) =>
        dnsLookup(host, { all: true, verbatim: true }, (error, result) => (error ? reject(error) : resolve(result))),
      );
  if (!allowPrivate) {
    const bad = addresses.find((entry) => !isPublicAddress(entry.address));
    if (bad) throw new ForbiddenAddressError(host, bad.address);
  }
  return addresses;
}

/**
 * A `lookup` for net/tls/undici connections: the address checked is the address connected to,
 * so a DNS answer cannot change between the check and the connect (no DNS rebinding).
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolvePublicAddresses(hostname, allowPrivate).then(
      (addresses) => {
        if (options?.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: Error) => callback(error),
    );
  }) as LookupFunction;
}
