import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** How the receiver answers one call. */
export type Answer = 'ok' | '500' | '429' | 'reset' | 'timeout' | 'slow-loris';

interface Call {
  webhookId: string;
  event: string;
  requestId: string;
  answer: Answer;
  at: number;
}

export interface ChaosReceiver {
  url: string;
  calls: Call[];
  /** Decides the answer of each call; `attempt` counts the calls made for that webhook-id so far (1 = first). */
  behave(decide: (call: { webhookId: string; attempt: number }) => Answer): void;
  close(): Promise<void>;
}

/**
 * A real webhook receiver on loopback that can misbehave the ways receivers do: answer 5xx, 429
 * with Retry-After, reset the connection, never answer (a timeout), or send its headers and then
 * trickle a byte now and then without ever finishing (slow-loris).
 */
export async function startChaosReceiver(): Promise<ChaosReceiver> {
  const calls: Call[] = [];
  const attempts = new Map<string, number>();
  let decide: (call: { webhookId: string; attempt: number }) => Answer = () => 'ok';
  const held = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const webhookId = String(request.headers['webhook-id'] ?? '');
      const attempt = (attempts.get(webhookId) ?? 0) + 1;
      attempts.set(webhookId, attempt);
      let requestId = '';
      try {
        requestId = String((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string }).id ?? '');
      } catch {
        /* not ours */
      }
      const answer = decide({ webhookId, attempt });
      calls.push({ webhookId, event: String(request.headers['x-webhook-event'] ?? ''), requestId, answer, at: Date.now() });
      switch (answer) {
        case 'ok':
          return response.writeHead(204).end();
        case '500':
          return response.writeHead(500, { 'content-type': 'text/plain' }).end('chaos');
        case '429':
          return response.writeHead(429, { 'retry-after': '1' }).end();
        case 'reset':
          return request.socket.resetAndDestroy();
        case 'timeout':
          held.add(request.socket);
          return;
        case 'slow-loris': {
          response.writeHead(200, { 'content-type': 'text/plain' });
          response.write('.');
          const timer = setInterval(() => response.write('.'), 200);
          timers.add(timer);
          response.on('close', () => {
            clearInterval(timer);
            timers.delete(timer);
          });
        }
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    behave(next) {
      decide = next;
    },
    async close() {
      for (const timer of timers) clearInterval(timer);
      for (const socket of held) socket.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
