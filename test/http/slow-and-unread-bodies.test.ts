// needs: database, every-node-line
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { testDialects } from '../support/databases.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * Bounds on what a client can hold or make the server read: a whole-request timeout, a headers
 * timeout, connection caps (overall and per address), and no reading of a body the answer did not
 * need. Real sockets on loopback; the timeouts are configured short (1 s) so the bounds below
 * are generous multiples of them, not measurements of this machine's speed.
 */

interface Peer {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server closed or reset the connection. */
  closed: Promise<void>;
  isClosed(): boolean;
}

/** `allowHalfOpen`: the client does not end its side when the server ends its own (it may keep sending). */
function open(port: number, localAddress = '127.0.0.1', allowHalfOpen = false): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress, allowHalfOpen });
    let text = '';
    let isClosed = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => {});
    const closed = new Promise<void>((done) => socket.once('close', () => ((isClosed = true), done())));
    socket.once('connect', () => resolve({ socket, received: () => text, closed, isClosed: () => isClosed }));
    socket.once('error', reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with how long the server took to close the connection, or undefined if it had not within `ms`. */
async function closedWithin(peer: Peer, ms: number, startedAt: number): Promise<number | undefined> {
  const outcome = await Promise.race([peer.closed.then(() => 'closed' as const), sleep(ms).then(() => 'open' as const)]);
  return outcome === 'closed' ? Date.now() - startedAt : undefined;
}

/** Writes one byte every `everyMs` until the connection closes (or `stop` says so). */
async function trickle(peer: Peer, everyMs: number, byte = ' '): Promise<void> {
  while (!peer.isClosed() && !peer.socket.destroyed) {
    peer.socket.write(byte);
    await sleep(everyMs);
  }
}

const port = (t: TestApp) => Number(new URL(t.url).port);

const MiB = 1024 * 1024;
const piece = Buffer.alloc(64 * 1024, 'a');
const chunkOf = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);

/** An HTTP/1.1 answer read off a socket: its status, whether it announced `Connection: close`, and whether its body arrived whole (as long as its Content-Length). */
function parseAnswer(text: string): { status: number; closes: boolean; bodyWhole: boolean } | undefined {
  const end = text.indexOf('\r\n\r\n');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(text);
  if (end < 0 || !status) return undefined;
  const head = text.slice(0, end);
  const length = /\r\ncontent-length: *(\d+)/i.exec(head);
  const body = text.slice(end + 4);
  return { status: Number(status[1]), closes: /\r\nconnection: *close/i.test(head), bodyWhole: length !== null && Number(length[1]) > 0 && body.length === Number(length[1]) };
}

interface Upload {
  /** Every write of the request was accepted: the client was not reset while sending. */
  sent: boolean;
  /** Everything the server sent, read once the request was sent. */
  received: string;
  /** The server ended its side with a FIN (a reset ends a connection without 'end'). */
  ended: boolean;
}

/**
 * A blocking HTTP client on a link slower than loopback: sends the request, its body in 64 KiB
 * pieces a few milliseconds apart, reads nothing until all of it is sent (as blocking HTTP clients
 * do), then reads the answer until the server closes. A reset while it sends fails its write, and
 * Node then drops the connection unread, as such clients do.
 */
function blockingUpload(port: number, head: string, bodyBytes: number, chunked: boolean): Promise<Upload> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.pause();
    let received = '';
    let sent = false;
    let ended = false;
    socket.on('error', () => {});
    socket.once('end', () => (ended = true));
    socket.once('close', () => resolve({ sent, received, ended }));
    socket.once('connect', () => {
      void (async () => {
        const write = (data: string | Buffer) => new Promise<boolean>((done) => socket.write(data, (error) => done(!error)));
        let accepted = await write(head);
        for (let written = 0; accepted && written < bodyBytes; written += piece.length) {
          accepted = await write(chunked ? chunkOf(piece) : piece);
          await sleep(5);
        }
        if (accepted && chunked) accepted = await write('0\r\n\r\n');
        sent = accepted;
        if (socket.destroyed) return;
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
        socket.resume();
      })();
    });
  });
}

/** The server's side of the next connection it accepts. */
const nextServerSocket = (t: TestApp) => new Promise<Socket>((resolve) => t.app.server.once('connection', resolve));

/** A connection whose server side is known, on which an unauthenticated upload of `bodyBytes` has begun; `ended()` says whether the server half-closed it. */
async function startUpload(t: TestApp, bodyBytes: number) {
  const server = nextServerSocket(t);
  const peer = await open(port(t), '127.0.0.1', true);
  const serverSocket = await server;
  let ended = false;
  peer.socket.once('end', () => (ended = true));
  peer.socket.write(`POST /v2/requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`);
  return { peer, serverSocket, ended: () => ended };
}

/** Resolves once the peer has read a whole answer head, or after `ms`. */
async function answerRead(peer: Peer, ms: number): Promise<void> {
  for (let waited = 0; !parseAnswer(peer.received()) && waited < ms; waited += 10) await sleep(10);
}

/** Resolves true once `socket` closed, false if it had not within `ms`. */
const closesWithin = (socket: Socket, ms: number) =>
  Promise.race([new Promise<boolean>((done) => (socket.destroyed ? done(true) : socket.once('close', () => done(true)))), sleep(ms).then(() => false)]);

for (const dialect of testDialects()) {
  describe(`slow and unread request bodies [${dialect}]`, () => {
    let t: TestApp;
    let token: string;
    before(async () => {
      t = await startTestApp(dialect, { HTTP_REQUEST_TIMEOUT: '1s', HTTP_HEADERS_TIMEOUT: '1s' });
      token = await t.token(await t.createClientAccount());
    });
    after(() => t.close());

    for (const [name, head] of [
      ['POST /v2/requests', (token: string) => `POST /v2/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`],
      ['POST /v2/oauth/token (the server fast path)', () => 'POST /v2/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n'],
    ] as const) {
      it(`${name}: a body sent a byte at a time is cut off by HTTP_REQUEST_TIMEOUT with a 408`, async () => {
        const peer = await open(port(t));
        const startedAt = Date.now();
        peer.socket.write(head(token));
        void trickle(peer, 100);
        const tookMs = await closedWithin(peer, 8_000, startedAt);
        assert.ok(tookMs !== undefined, 'the connection is still open after 8 s (HTTP_REQUEST_TIMEOUT=1s)');
        assert.match(peer.received(), /^HTTP\/1\.1 408 /);
      });
    }

    it('headers sent a byte at a time are cut off by HTTP_HEADERS_TIMEOUT', async () => {
      const peer = await open(port(t));
      const startedAt = Date.now();
      peer.socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n');
      void trickle(peer, 100, 'x');
      assert.ok((await closedWithin(peer, 8_000, startedAt)) !== undefined, 'the connection is still open after 8 s (HTTP_HEADERS_TIMEOUT=1s)');
      assert.match(peer.received(), /^HTTP\/1\.1 408 /);
    });

    it('a connection that sends nothing is closed by HTTP_HEADERS_TIMEOUT', async () => {
      const peer = await open(port(t));
      assert.ok((await closedWithin(peer, 8_000, Date.now())) !== undefined, 'an idle new connection is still open after 8 s');
    });

    for (const framing of ['chunked', 'Content-Length'] as const) {
      it(`a ${framing} body of 64 MiB streamed after a 401 is not read: the server closes the connection`, async () => {
        const peer = await open(port(t));
        const limit = 64 * 1024 * 1024;
        const piece = Buffer.alloc(64 * 1024, 'a');
        const chunked = framing === 'chunked';
        peer.socket.write(`POST /v2/requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${limit}`}\r\n\r\n`);
        const chunk = chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece;
        // Bytes the client's kernel accepted: what it managed to send before the server closed.
        let written = 0;
        while (written < limit && !peer.isClosed()) {
          const accepted = await new Promise<boolean>((resolve) => peer.socket.write(chunk, (error) => resolve(!error)));
          if (!accepted) break;
          written += chunk.length;
        }
        await Promise.race([peer.closed, sleep(5_000)]);
        if (process.env.REPORT_UNREAD_BODY) console.log(`${framing}: the client wrote ${(written / 1024 / 1024).toFixed(2)} MiB`);
        assert.match(peer.received(), /^HTTP\/1\.1 401 /);
        assert.ok(peer.isClosed(), 'the server keeps the connection open');
        assert.ok(written < 8 * 1024 * 1024, `the client wrote ${(written / 1024 / 1024).toFixed(1)} MiB after its 401`);
      });
    }

    it('a body over 1 MiB announced by Content-Length gets its 413 and the connection is closed unread', async () => {
      const peer = await open(port(t));
      peer.socket.write(`POST /v2/requests HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n`);
      void trickle(peer, 10, 'a');
      await Promise.race([peer.closed, sleep(5_000)]);
      assert.match(peer.received(), /^HTTP\/1\.1 413 /);
      assert.ok(peer.isClosed(), 'the server keeps the connection open');
    });

    it('keep-alive is kept for requests whose body was read, refused or not', async () => {
      const peer = await open(port(t));
      const body = JSON.stringify({ experience: 'none' });
      const requests = [
        'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n',
        `POST /v2/requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST /v2/oauth/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n\r\na=b`,
        'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n',
      ];
      for (const [i, request] of requests.entries()) {
        const before = peer.received().length;
        peer.socket.write(request);
        for (let waited = 0; !/\r\n\r\n/.test(peer.received().slice(before)) && waited < 5_000; waited += 10) await sleep(10);
        assert.match(peer.received().slice(before), /^HTTP\/1\.1 (200|401|400) /, `answer ${i + 1}`);
        assert.doesNotMatch(peer.received().slice(before), /connection: close/i, `answer ${i + 1}`);
      }
      assert.equal(peer.isClosed(), false);
      peer.socket.destroy();
    });
  });
}

/**
 * The lingering close after an answer given before the body was read (http-server.ts): the server
 * half-closes, discards what the client still sends, and closes when the client closes its side, or
 * at its bounds (a second without a byte, 2 MiB, 5 s). HTTP_REQUEST_TIMEOUT is its default (30 s),
 * so what ends these connections is the lingering close's own bounds; the bounds asserted are
 * generous multiples of them, below the request timeout.
 */
describe('lingering close after an answer given before the body was read', () => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await startTestApp('sqlite');
    token = await t.token(await t.createClientAccount());
  });
  after(() => t.close());

  // 1.5 MiB: over the 1 MiB body limit (a 413 with a token), within what the server discards (2 MiB).
  const bodyBytes = 1.5 * MiB;
  const uploads = 20;
  for (const [answer, status, auth] of [
    ['its 401 (no token)', 401, () => ''],
    ['its 413 (over 1 MiB)', 413, () => `Authorization: Bearer ${token}\r\n`],
  ] as const) {
    for (const chunked of [false, true]) {
      it(`${uploads} blocking clients uploading 1.5 MiB ${chunked ? 'chunked' : 'by Content-Length'} each send it whole, then read ${answer} and the server's FIN`, async () => {
        const head = `POST /v2/requests HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bodyBytes}`}\r\n\r\n`;
        const results = await Promise.all(Array.from({ length: uploads }, () => blockingUpload(port(t), head, bodyBytes, chunked)));
        const outcome = (upload: Upload) => {
          const parsed = parseAnswer(upload.received);
          if (!upload.sent) return 'reset while sending its body';
          if (!parsed) return `no answer (${JSON.stringify(upload.received.slice(0, 40))})`;
          if (parsed.status !== status || !parsed.closes || !parsed.bodyWhole) return `answer ${parsed.status}, connection close ${parsed.closes}, body whole ${parsed.bodyWhole}`;
          return upload.ended ? 'ok' : 'no FIN from the server';
        };
        assert.deepEqual(
          results.map(outcome),
          results.map(() => 'ok'),
        );
      });
    }
  }

  it(`undici uploading a streamed 32 MiB body reads each 401 whole (${uploads} uploads)`, async () => {
    const agent = new Agent();
    try {
      for (let i = 0; i < uploads; i++) {
        const body = Readable.from(
          (function* () {
            for (let sent = 0; sent < 32 * MiB; sent += piece.length) yield piece;
          })(),
        );
        const response = await request(`${t.url}/v2/requests`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, dispatcher: agent });
        assert.equal(response.statusCode, 401, `upload ${i + 1}`);
        assert.match(await response.body.text(), /"status":401/, `upload ${i + 1}`);
      }
    } finally {
      await agent.close();
    }
  });

  it('a client that keeps sending as fast as it can after its 401 is cut off after the bytes the server discards', async () => {
    const { peer, serverSocket, ended } = await startUpload(t, 64 * MiB);
    let written = 0;
    while (written < 64 * MiB && !peer.isClosed()) {
      const accepted = await new Promise<boolean>((resolve) => peer.socket.write(piece, (error) => resolve(!error)));
      if (!accepted) break;
      written += piece.length;
    }
    assert.ok(await closesWithin(serverSocket, 20_000), 'the server keeps the connection open');
    await Promise.race([peer.closed, sleep(5_000)]);
    if (process.env.REPORT_UNREAD_BODY) console.log(`lingering: the client wrote ${(written / MiB).toFixed(2)} MiB`);
    assert.equal(parseAnswer(peer.received())?.status, 401);
    assert.ok(ended(), 'the server did not half-close');
    assert.ok(peer.isClosed(), 'the client is still connected');
    assert.ok(written < 8 * MiB, `the client wrote ${(written / MiB).toFixed(1)} MiB after its 401`);
  });

  it('a client that trickles its body after its 401 is cut off by the lingering time cap, long before HTTP_REQUEST_TIMEOUT', async () => {
    const { peer, serverSocket, ended } = await startUpload(t, 64 * MiB);
    peer.socket.write(Buffer.alloc(128 * 1024, 'a'));
    void trickle(peer, 50, 'a');
    await answerRead(peer, 5_000);
    // The lingering time cap is 5 s, the request timeout 30 s.
    assert.ok(await closesWithin(serverSocket, 20_000), 'the server keeps reading a body trickled after its 401');
    assert.equal(parseAnswer(peer.received())?.status, 401);
    assert.ok(ended(), 'the server did not half-close');
    peer.socket.destroy();
  });

  it('a client that stops sending after its 401 without closing is closed', async () => {
    const { peer, serverSocket } = await startUpload(t, bodyBytes);
    peer.socket.write(Buffer.alloc(256 * 1024, 'a'));
    await answerRead(peer, 5_000);
    assert.ok(await closesWithin(serverSocket, 20_000), 'the server keeps an idle lingering connection open');
    assert.equal(parseAnswer(peer.received())?.status, 401);
    peer.socket.destroy();
  });
});

describe('connection caps: HTTP_MAX_CONNECTIONS and HTTP_MAX_CONNECTIONS_PER_ADDRESS', () => {
  let t: TestApp;
  const peers: Peer[] = [];
  before(async () => {
    t = await startTestApp('sqlite', { HTTP_MAX_CONNECTIONS: '5', HTTP_MAX_CONNECTIONS_PER_ADDRESS: '3' });
  });
  after(async () => {
    for (const peer of peers) peer.socket.destroy();
    await t.close();
  });

  /** Opens a connection and asks for /health/live on it; says whether it was answered (the connection stays open). */
  async function served(from: string): Promise<{ peer: Peer; answered: boolean }> {
    const peer = await open(port(t), from);
    peers.push(peer);
    peer.socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
    for (let waited = 0; !peer.received().includes('\r\n\r\n') && !peer.isClosed() && waited < 5_000; waited += 10) await sleep(10);
    return { peer, answered: /^HTTP\/1\.1 200 /.test(peer.received()) };
  }

  it('refuses a connection over the per-address cap while another address still connects; a closed one frees its place', async () => {
    const first = [];
    for (let i = 0; i < 3; i++) first.push(await served('127.0.0.2'));
    assert.deepEqual(
      first.map((c) => c.answered),
      [true, true, true],
    );
    const over = await served('127.0.0.2');
    assert.equal(over.answered, false, 'a fourth connection from 127.0.0.2');
    await over.peer.closed;
    assert.equal((await served('127.0.0.3')).answered, true, 'another address');
    first[0]!.peer.socket.destroy();
    let again = false;
    for (let i = 0; i < 50 && !again; i++) {
      again = (await served('127.0.0.2')).answered;
      if (!again) await sleep(50);
    }
    assert.ok(again, 'a connection from 127.0.0.2 once one of its three closed');
  });

  it('refuses a connection over the overall cap', async () => {
    for (const peer of peers.splice(0)) peer.socket.destroy();
    const openConnections = () => new Promise<number>((resolve, reject) => t.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    for (let i = 0; i < 100 && (await openConnections()) > 0; i++) await sleep(20);
    const five = [];
    for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7', '127.0.0.8']) five.push(await served(from));
    assert.deepEqual(
      five.map((c) => c.answered),
      [true, true, true, true, true],
    );
    assert.equal((await served('127.0.0.9')).answered, false, 'a sixth connection');
  });
});
