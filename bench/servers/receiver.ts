// A webhook receiver for the delivery benchmark, in its own process so it never shares an event
// loop with the service it measures: every POST is answered 204 (keep-alive) and its arrival time
// recorded by webhook-id. GET /stats → {count, first, last}; GET /arrivals → [[webhookId, ms], …]
// (first arrival per id); POST /reset clears; GET /take answers {count, arrivals} and clears. Times are wall-clock milliseconds with sub-ms
// precision (comparable with the service's Date.now()).
// RECEIVER_ALSO_ON=127.0.0.2: the same receiver also listens on that loopback address (same port),
// as an endpoint on another host would; its control calls stay on 127.0.0.1.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

const now = () => performance.timeOrigin + performance.now();
let count = 0;
let first = 0;
let last = 0;
let arrivals = new Map<string, number>();

const handle = (request: IncomingMessage, response: ServerResponse) => {
  if (request.method === 'POST' && request.url !== '/reset') {
    // Drain the body (the service sends it in full) before answering.
    request.resume();
    request.on('end', () => {
      const at = now();
      count += 1;
      if (count === 1) first = at;
      last = at;
      const id = request.headers['webhook-id'];
      if (typeof id === 'string' && !arrivals.has(id)) arrivals.set(id, at);
      response.writeHead(204).end();
    });
    return;
  }
  let body: unknown = { ok: true };
  if (request.url === '/stats') body = { count, first, last };
  else if (request.url === '/arrivals') body = [...arrivals];
  else if (request.url === '/take') {
    // The arrivals so far, and a fresh start, in one step: nothing arrives in between.
    body = { count, arrivals: [...arrivals] };
    count = 0;
    first = 0;
    last = 0;
    arrivals = new Map();
  } else if (request.url === '/reset') {
    count = 0;
    first = 0;
    last = 0;
    arrivals = new Map();
  }
  request.resume();
  // A control call closes its connection: the suite may block its own event loop for longer than
  // keepAliveTimeout (inserting a million rows in-process), and a pooled connection the receiver
  // has closed meanwhile would fail the next call ("other side closed").
  response.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body));
};
const servers = [createServer(handle)];
if (process.env.RECEIVER_ALSO_ON) servers.push(createServer(handle));
servers.forEach((server, i) => {
  server.keepAliveTimeout = 30_000;
  server.listen(Number(process.env.PORT), i === 0 ? '127.0.0.1' : process.env.RECEIVER_ALSO_ON);
});
process.on('SIGTERM', () => {
  process.stderr.write(`receiver: ${count} calls\n`);
  for (const server of servers) {
    server.close();
    server.closeAllConnections();
  }
  process.exit(0);
});
