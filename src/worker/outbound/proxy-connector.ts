import { BlockList, connect as netConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { buildConnector } from 'undici';
import type { OutboundProxy } from '../../config.js';
import { hostForLookup, type GuardedResolver } from '../../net/address-policy.js';
import { DeliveryFailure } from './delivery-failure.js';

/**
 * The connections of the outbound HTTP client (http-client.ts) when OUTBOUND_PROXY is set: an
 * undici `connect` function that opens each connection to a callback or token URL through the
 * egress proxy, by HTTP CONNECT, unless OUTBOUND_PROXY_BYPASS lists the destination
 * (docs/delivery.md, "Egress proxy").
 *
 * The SSRF policy holds as without a proxy: the destination is resolved and vetted here, by the
 * same GuardedResolver the concurrency limiter counted the call against, and the proxy is asked to
 * CONNECT to that vetted IP address and port, never to a name it would resolve itself. So a
 * forbidden address is refused before the proxy hears of it, and a DNS answer cannot change between
 * the check and the connection. The URL's host name still goes in `Host` (the HTTP client writes it)
 * and in TLS: SNI and the certificate check use it, over the tunnelled socket. Plain-http callbacks
 * go through the same CONNECT tunnel (one mechanism, no absolute-URI requests a proxy could
 * rewrite or cache). Every failure of the proxy is a DeliveryFailure whose message names the proxy
 * by host and port only: its credentials never appear in a message or a log.
 */

/** The TLS material of one agent: the CAs trusted and, for the agent that presents it, the service's certificate. */
interface ConnectorTls {
  ca?: string[];
  cert?: string;
  key?: string;
}

export interface ProxyConnectorOptions {
  proxy: OutboundProxy;
  /** OUTBOUND_PROXY_BYPASS, as parsed by config.ts: `host.name`, `.domain`, IP addresses and CIDR blocks. */
  bypass: readonly string[];
  /** Resolves and vets destinations (the SSRF policy); its answer is the address tunnelled to. */
  resolver: GuardedResolver;
  /** CALLBACK_TIMEOUT: bounds the proxy's connect, the CONNECT exchange and the TLS handshake together. */
  timeoutMs: number;
  tls: ConnectorTls;
}

/** A CONNECT answer's headers larger than this are not a proxy's answer. */
const MAX_CONNECT_ANSWER_BYTES = 16 * 1024;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  407: 'Proxy Authentication Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** `host:port`, with brackets around an IPv6 address. */
function endpoint(host: string, port: number): string {
  return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/** Whether a destination bypasses the proxy: by its URL's host name, or by the address it resolved to. */
export function bypassMatcher(entries: readonly string[]): (hostname: string, address: string) => boolean {
  const names = new Set<string>();
  const suffixes: string[] = [];
  const blocks = new BlockList();
  let hasBlocks = false;
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    if (family !== 0) {
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) blocks.addAddress(address, type);
      else blocks.addSubnet(address, Number(prefix), type);
      hasBlocks = true;
    } else if (entry.startsWith('.')) suffixes.push(entry);
    else names.add(entry);
  }
  return (hostname, address) => {
    const name = hostForLookup(hostname).toLowerCase();
    if (names.has(name) || suffixes.some((suffix) => name.endsWith(suffix))) return true;
    if (!hasBlocks) return false;
    const family = isIP(address);
    return family !== 0 && blocks.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
}

/** Why the proxy could not be reached, in words (the network's code when there are none). */
function unreachableReason(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
      return 'its host name does not resolve';
    case 'EAI_AGAIN':
      return 'its host name could not be resolved (DNS failure)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'no route to it';
    case 'ETIMEDOUT':
      return 'connection timed out';
    case 'ECONNRESET':
      return 'connection reset';
    default:
      return `${code ?? 'error'}: ${message ?? String(error)}`;
  }
}

/** The proxy's answer to CONNECT as a message: the status, its standard text, and the proxy's own reason if it differs. */
function refusal(status: number, reason: string): string {
  const standard = STATUS_TEXT[status];
  // The proxy's reason phrase is shown as printable text, bounded: it ends up in the delivery log.
  const own = reason
    .replace(/[^\x20-\x7e]/g, '?')
    .trim()
    .slice(0, 100);
  if (!standard) return own ? `${status} ${own}` : String(status);
  return own && own.toLowerCase() !== standard.toLowerCase() ? `${status} ${standard} (${own})` : `${status} ${standard}`;
}

/**
 * An undici `connect` function for the agents of http-client.ts. A bypassed destination gets
 * undici's own connector (with the policy's `lookup`, as without a proxy); any other is tunnelled.
 */
export function createProxyConnector(options: ProxyConnectorOptions): buildConnector.connector {
  const { proxy, resolver, timeoutMs } = options;
  const tlsOptions = { rejectUnauthorized: true, ...options.tls };
  const direct = buildConnector({ timeout: timeoutMs, lookup: resolver.lookup, ...tlsOptions });
  const bypasses = bypassMatcher(options.bypass);
  const proxyName = endpoint(proxy.host, proxy.port);
  const proxyAuthorization = proxy.username !== undefined ? `Proxy-Authorization: Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ''}`).toString('base64')}\r\n` : '';

  return (connectOptions, callback) => {
    const hostname = hostForLookup(connectOptions.hostname);
    const https = connectOptions.protocol === 'https:';
    const port = Number(connectOptions.port) || (https ? 443 : 80);
    let finished = false;
    let proxySocket: Socket | undefined;
    let secureSocket: TLSSocket | undefined;
    const finish = (error: Error | null, socket?: Socket) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (error) {
        secureSocket?.destroy();
        proxySocket?.destroy();
        callback(error, null);
      } else callback(null, socket!);
    };
    const timer = setTimeout(
      () => finish(new DeliveryFailure(`timed out after ${timeoutMs} ms connecting to ${endpoint(hostname, port)} through the egress proxy ${proxyName}`, 'TIMEOUT')),
      timeoutMs,
    );

    // Vetted first: a refused host or address (ForbiddenAddressError) never reaches the proxy.
    resolver.resolve(hostname).then(
      (addresses) => {
        if (finished) return;
        const address = addresses[0]!.address;
        if (bypasses(hostname, address)) {
          clearTimeout(timer);
          finished = true;
          direct(connectOptions, callback);
          return;
        }
        tunnel(address);
      },
      (error: Error) => finish(error),
    );

    function tunnel(address: string): void {
      const target = endpoint(address, port);
      const socket = netConnect({ host: proxy.host, port: proxy.port });
      proxySocket = socket;
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 60_000);
      let connected = false;
      let answer: Buffer = Buffer.alloc(0);

      const detach = () => {
        socket.removeListener('connect', onConnect);
        socket.removeListener('readable', onReadable);
        socket.removeListener('error', onError);
        socket.removeListener('close', onClose);
      };
      const fail = (error: Error) => {
        detach();
        socket.on('error', () => {});
        finish(error);
      };
      function onConnect() {
        connected = true;
        socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${proxyAuthorization}\r\n`);
      }
      function onError(error: Error) {
        if (!connected) fail(new DeliveryFailure(`the egress proxy ${proxyName} could not be reached: ${unreachableReason(error)}`, 'PROXY_UNREACHABLE', { cause: error }));
        else fail(new DeliveryFailure(`the egress proxy ${proxyName} broke off CONNECT to ${target}: ${unreachableReason(error)}`, 'PROXY_REFUSED', { cause: error }));
      }
      function onClose() {
        fail(new DeliveryFailure(`the egress proxy ${proxyName} closed the connection before answering CONNECT to ${target}`, 'PROXY_REFUSED'));
      }
      function onReadable() {
        let chunk: Buffer | null;
        while ((chunk = socket.read() as Buffer | null) !== null) {
          answer = answer.length === 0 ? chunk : Buffer.concat([answer, chunk]);
          const end = answer.indexOf('\r\n\r\n');
          if (end < 0) {
            if (answer.length > MAX_CONNECT_ANSWER_BYTES) {
              fail(new DeliveryFailure(`the egress proxy ${proxyName} answered CONNECT to ${target} with more than ${MAX_CONNECT_ANSWER_BYTES} bytes of headers`, 'PROXY_REFUSED'));
              return;
            }
            continue;
          }
          detach();
          const rest = answer.subarray(end + 4);
          // Bytes after the answer belong to the tunnel (a well-behaved proxy sends none first).
          if (rest.length > 0) socket.unshift(rest);
          opened(answer.subarray(0, end).toString('latin1'));
          return;
        }
      }
      function opened(head: string): void {
        const status = /^HTTP\/1\.[01] (\d{3})(?: ([^\r\n]*))?/.exec(head);
        if (!status) {
          fail(new DeliveryFailure(`the egress proxy ${proxyName} answered CONNECT to ${target} with something that is not HTTP`, 'PROXY_REFUSED'));
          return;
        }
        const code = Number(status[1]);
        if (code < 200 || code > 299) {
          // 407 is the standard answer about proxy credentials; some proxies (tinyproxy) answer wrong ones with 401.
          const credentials = code === 407 || code === 401;
          const hint = !credentials ? '' : proxyAuthorization ? '; check the user and password of OUTBOUND_PROXY' : '; it wants credentials: OUTBOUND_PROXY=http://user:password@host:port';
          fail(new DeliveryFailure(`the egress proxy ${proxyName} refused CONNECT to ${target}: ${refusal(code, status[2] ?? '')}${hint}`, 'PROXY_REFUSED'));
          return;
        }
        if (!https) {
          finish(null, socket);
          return;
        }
        // TLS to the destination over the tunnel: SNI and the certificate check use the URL's host
        // name (an IP literal is checked as an address and sent no SNI), with the agent's CAs and certificate.
        socket.on('error', () => {}); // the TLS socket reports its transport's errors
        const secure = tlsConnect({
          ...tlsOptions,
          socket,
          host: hostname,
          servername: connectOptions.servername || (isIP(hostname) ? '' : hostname),
          ALPNProtocols: ['http/1.1'],
        });
        secureSocket = secure;
        const onTlsError = (error: Error) => finish(error);
        secure.once('error', onTlsError);
        secure.once('secureConnect', () => {
          secure.removeListener('error', onTlsError);
          finish(null, secure);
        });
      }

      socket.once('connect', onConnect);
      socket.on('readable', onReadable);
      socket.on('error', onError);
      socket.once('close', onClose);
    }
  };
}
