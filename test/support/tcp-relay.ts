import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP relay on loopback in front of a real server (PostgreSQL), standing for the one address a
 * service connects to in a failover, and for the network in between. It can:
 * - `silence()`: the server is lost without a word: the connections the relay holds stay open and
 *   pass nothing more, in either direction (the server's side of them is closed, as a lost host's
 *   sessions end: their transactions roll back and let go of their locks), and new connections are
 *   taken and never answered. The service's kernel still sees its bytes accepted: only its own
 *   bounds can tell;
 * - `pointTo(port)`: new connections go to that server (the address moved to the new primary);
 *   the silenced ones stay open and silent.
 */
export interface TcpRelay {
  port: number;
  url(databaseUrl: string): string;
  /** Connections relayed since the start (by the relay, new ones only). */
  readonly connections: number;
  silence(): void;
  pointTo(port: number): void;
  close(): Promise<void>;
}

export async function startTcpRelay(targetPort: number): Promise<TcpRelay> {
  let target: number | 'silently' = targetPort;
  let connections = 0;
  const pairs = new Set<{ client: Socket; server: Socket | undefined; silenced: boolean }>();
  const server: Server = createServer((client) => {
    connections += 1;
    const pair = { client, server: undefined as Socket | undefined, silenced: target === 'silently' };
    pairs.add(pair);
    client.on('error', () => {});
    client.on('close', () => {
      pair.server?.destroy();
      pairs.delete(pair);
    });
    // Silent from the start: read and drop what the client sends, answer nothing.
    if (pair.silenced) return void client.on('data', () => {});
    const upstream = connect({ port: target as number, host: '127.0.0.1' });
    pair.server = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      if (!pair.silenced) client.destroy();
    });
    client.on('data', (chunk) => {
      if (!pair.silenced) upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      if (!pair.silenced) client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url(databaseUrl) {
      const url = new URL(databaseUrl);
      url.host = `127.0.0.1:${port}`;
      return url.toString();
    },
    get connections() {
      return connections;
    },
    silence() {
      target = 'silently';
      for (const pair of pairs) {
        pair.silenced = true;
        pair.server?.destroy();
      }
    },
    pointTo(next) {
      target = next;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
