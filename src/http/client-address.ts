import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { TrustProxy } from '../config.js';

/**
 * The caller's address under TRUST_PROXY, the one rule used wherever the service needs it: the
 * token endpoint's failure limits on the server's fast path and in the Fastify routes, Fastify's
 * own `request.ip` (given `trusts` as its `trustProxy`), and the per-address connection cap
 * (which sees only the socket, so it exempts the peers trusted as proxies).
 *
 * The walk is the one of `proxy-addr` (Express, Fastify): from the socket's peer back through
 * X-Forwarded-For, right to left, the first address that is not a trusted proxy is the caller; if
 * every one is trusted, the leftmost. Without TRUST_PROXY the header is ignored: anyone can write it.
 */
export interface ClientAddress {
  /** Whether `address`, `hop` steps from the service (0 = the socket's peer), is a proxy whose X-Forwarded-For counts. */
  trusts: (address: string, hop: number) => boolean;
  /** The caller's address from the socket's peer and the X-Forwarded-For header. */
  of: (peer: string | undefined, forwardedFor: string | string[] | undefined) => string;
  /** The same, for a Node request. */
  ofRequest: (request: IncomingMessage) => string;
}

/** `::ffff:192.0.2.1` (an IPv4 peer on a dual-stack socket) is `192.0.2.1`. */
export function normalizeAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1]! : address;
}

function proxyList(addresses: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of addresses) {
    const [address, prefix] = entry.split('/') as [string, string | undefined];
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return list;
}

export function clientAddress(setting: TrustProxy): ClientAddress {
  let trusts: (address: string, hop: number) => boolean;
  switch (setting.kind) {
    case 'none':
      trusts = () => false;
      break;
    case 'all':
      trusts = () => true;
      break;
    case 'hops':
      trusts = (_address, hop) => hop < setting.hops;
      break;
    case 'addresses': {
      const list = proxyList(setting.addresses);
      trusts = (address) => {
        const normalized = normalizeAddress(address.trim());
        const family = isIP(normalized);
        return family !== 0 && list.check(normalized, family === 6 ? 'ipv6' : 'ipv4');
      };
      break;
    }
  }
  const of = (peer: string | undefined, forwardedFor: string | string[] | undefined): string => {
    const socket = normalizeAddress(peer ?? '');
    if (setting.kind === 'none' || forwardedFor === undefined || !trusts(socket, 0)) return socket;
    const forwarded = [forwardedFor]
      .flat()
      .join(',')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    let caller = socket;
    for (let hop = 1; hop <= forwarded.length; hop++) {
      caller = normalizeAddress(forwarded[forwarded.length - hop]!);
      if (!trusts(caller, hop)) return caller;
    }
    return caller;
  };
  return { trusts, of, ofRequest: (request) => of(request.socket.remoteAddress, request.headers['x-forwarded-for']) };
}
