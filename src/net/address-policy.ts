import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Addresses a callback may never reach unless CALLBACK_ALLOW_PRIVATE_NETWORKS=true, decided by
 * address block on the parsed address, never by spelling: loopback, private, CGNAT, link-local
 * (cloud metadata lives at 169.254.169.254 and fd00:ec2::254), unspecified, documentation,
 * benchmarking, multicast and reserved ranges. An IPv6 address that carries an IPv4 address
 * (mapped, translated, NAT64, 6to4) is judged by the IPv4 address it carries.
 */
const BLOCKED_V4 = new BlockList();
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
  BLOCKED_V4.addSubnet(network, prefix, 'ipv4');
}

const BLOCKED_V6 = new BlockList();
for (const [network, prefix] of [
  // ::/8 holds the unspecified and loopback addresses, the IPv4-compatible form (::7f00:1) and
  // ISATAP-like spellings (::5efe:7f00:1); the mapped and translated forms inside it are judged by
  // their IPv4 address before this list is consulted.
  ['::', 8],
  ['64:ff9b:1::', 48], // NAT64 for local use (RFC 8215): only ever reaches private networks
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments: Teredo, ORCHID, benchmarking…
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED_V6.addSubnet(network, prefix, 'ipv6');
}

/** The 16 bytes of an IPv6 address (any valid spelling, dotted-quad tail included). */
function ipv6Bytes(address: string): Uint8Array {
  let text = address.toLowerCase().split('%')[0]!;
  const bytes = new Uint8Array(16);
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(':').filter((g) => g !== '') : []);
  const left = groups(head);
  const right = groups(tail);
  const all = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  all.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[2 * i] = value >> 8;
    bytes[2 * i + 1] = value & 255;
  });
  return bytes;
}

const ipv4At = (bytes: Uint8Array, offset: number) => `${bytes[offset]}.${bytes[offset + 1]}.${bytes[offset + 2]}.${bytes[offset + 3]}`;
const startsWith = (bytes: Uint8Array, prefix: number[]) => prefix.every((byte, i) => bytes[i] === byte);

/** The IPv4 address an IPv6 address carries, by block: mapped, translated, NAT64 well-known prefix, 6to4. */
export function embeddedIPv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  const zeros = (n: number) => Array(n).fill(0) as number[];
  if (startsWith(bytes, [...zeros(10), 0xff, 0xff])) return ipv4At(bytes, 12); // ::ffff:0:0/96, mapped
  if (startsWith(bytes, [...zeros(8), 0xff, 0xff, 0, 0])) return ipv4At(bytes, 12); // ::ffff:0:0:0/96, translated (SIIT)
  if (startsWith(bytes, [0, 0x64, 0xff, 0x9b, ...zeros(8)])) return ipv4At(bytes, 12); // 64:ff9b::/96, NAT64
  if (startsWith(bytes, [0x20, 0x02])) return ipv4At(bytes, 2); // 2002::/16, 6to4
  return undefined;
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED_V4.check(address, 'ipv4');
  if (family !== 6) return false;
  const v4 = embeddedIPv4(address);
  if (v4 !== undefined) return !BLOCKED_V4.check(v4, 'ipv4');
  return !BLOCKED_V6.check(address, 'ipv6');
}

/**
 * The way forward every refusal of a non-public address names, at save time and in the delivery
 * log alike: what a developer with a receiver on their own machine or network can do.
 */
export const PRIVATE_ADDRESS_WAY_FORWARD = 'for local development, use `rewards listen --forward-to <url>`, or set CALLBACK_ALLOW_PRIVATE_NETWORKS=true on the service';

/** Why `host` is refused: it is (an IP literal) or resolves to `address`, a non-public address; and what to do instead. */
export function forbiddenAddressMessage(host: string, address: string): string {
  const what = host === address ? `${host} is` : `${host} resolves to ${address},`;
  return `${what} a loopback, private, link-local or reserved address; ${PRIVATE_ADDRESS_WAY_FORWARD}`;
}

export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_CALLBACK_ADDRESS_FORBIDDEN';
  constructor(
    readonly hostname: string,
    readonly address: string,
  ) {
    super(forbiddenAddressMessage(hostname, address));
    this.name = 'ForbiddenAddressError';
  }
}

/** A URL's host as it is looked up: brackets of an IPv6 literal and one trailing dot removed. */
export function hostForLookup(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
}

/** Resolves a host name and refuses it when any of its addresses is not public. */
export async function resolvePublicAddresses(hostname: string, allowPrivate: boolean): Promise<LookupAddress[]> {
  const host = hostForLookup(hostname);
  const addresses: LookupAddress[] = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await new Promise((resolve, reject) => dnsLookup(host, { all: true, verbatim: true }, (error, result) => (error ? reject(error) : resolve(result))));
  if (!allowPrivate) {
    const bad = addresses.find((entry) => !isPublicAddress(entry.address));
    if (bad) throw new ForbiddenAddressError(host, bad.address);
  }
  return addresses;
}

/** How long a resolved callback host's addresses are reused: within it, the address a call was counted against is the one it connects to. */
const RESOLVED_ADDRESS_TTL_MS = 5_000;

/**
 * Resolves callback hosts under the address policy, remembering each answer for `ttlMs`. Outbound
 * calls are counted against the address their host resolves to (the per-address cap of the
 * concurrency limiter: other spellings and ports of one host share it), and their connections are
 * made with `lookup`, which answers from the same memory: the address counted, the address checked
 * and the address connected to are one (no DNS rebinding between them). Failures are not kept.
 */
export class GuardedResolver {
  readonly #answers = new Map<string, { until: number; addresses: Promise<LookupAddress[]> }>();

  constructor(
    private readonly allowPrivate: boolean,
    private readonly ttlMs = RESOLVED_ADDRESS_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The policy-checked addresses of `hostname` (a URL's host: brackets and one trailing dot are fine). */
  resolve(hostname: string): Promise<LookupAddress[]> {
    const host = hostForLookup(hostname);
    const now = this.now();
    const known = this.#answers.get(host);
    if (known && known.until > now) return known.addresses;
    if (this.#answers.size > 10_000) this.#answers.clear();
    const addresses = resolvePublicAddresses(host, this.allowPrivate);
    this.#answers.set(host, { until: now + this.ttlMs, addresses });
    addresses.catch(() => this.#answers.delete(host));
    return addresses;
  }

  /** A `lookup` for net/tls/undici connections. */
  readonly lookup: LookupFunction = ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    this.resolve(hostname).then(
      (addresses) => {
        if (options?.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: Error) => callback(error),
    );
  }) as LookupFunction;
}
