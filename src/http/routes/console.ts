import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypedApp } from '../typed-app.js';
import { DomainError, unavailable } from '../../domain/errors.js';
import { sendError } from '../plugins/errors.js';
import { CONSOLE_SECURITY_HEADERS } from '../console/security-headers.js';

/**
 * The web console's built files (`console/dist`, made by `scripts/build-console.mjs`), served at
 * `/console/` by the API itself (docs/console.md, "Served by the service"). A small handler, not
 * @fastify/static: the rules are few (one directory, SPA fallback, two cache policies) and each is
 * tested here.
 */

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
};

/** Vite names files under assets/ by their content's hash: a changed file is a new URL. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** index.html (and any other unhashed file) is revalidated on every load, so a new build shows at once. */
const REVALIDATE = 'no-cache';

export interface ConsoleRoutesOptions {
  /** The built console: `index.html` and `assets/`. */
  dir: string;
  /** What the 503 says while `index.html` is missing (the build at start is running, or could not run). */
  notBuiltDetail?: () => string;
}

type Resolved = { kind: 'file'; path: string } | { kind: 'fallback' } | { kind: 'not-found' };

/**
 * The file a path under `/console/` names, from the raw URL (Fastify's decoded params would hide
 * an encoded `..%2f`). Refused: anything that does not decode, a NUL or a backslash, any `.` or
 * `..` segment, dotfiles, and anything that resolves outside `dir`.
 */
function resolveConsolePath(dir: string, rawPath: string): Resolved {
  let relative: string;
  try {
    relative = decodeURIComponent(rawPath);
  } catch {
    return { kind: 'not-found' };
  }
  if (relative === '') return { kind: 'fallback' };
  if (/[\0\\]/.test(relative)) return { kind: 'not-found' };
  const segments = relative.split('/');
  if (segments.some((segment) => segment.startsWith('.'))) return { kind: 'not-found' };
  const root = resolve(dir);
  const path = resolve(root, ...segments.filter(Boolean));
  if (!path.startsWith(root + sep)) return { kind: 'not-found' };
  return { kind: 'file', path };
}

export async function consoleRoutes(app: TypedApp, options: ConsoleRoutesOptions): Promise<void> {
  const dir = resolve(options.dir);
  const indexPath = join(dir, 'index.html');

  // onSend, not onRequest: error responses (a 404, the 503, a refused URL) carry the headers too.
  app.addHook('onSend', function consoleSecurityHeaders(_request, reply, payload, done) {
    reply.headers(CONSOLE_SECURITY_HEADERS);
    done(null, payload);
  });

  async function sendFile(request: FastifyRequest, reply: FastifyReply, path: string, cacheControl: string): Promise<FastifyReply | undefined> {
    const stats = await stat(path).catch(() => undefined);
    if (!stats?.isFile()) return undefined;
    const etag = `W/"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
    reply.header('cache-control', cacheControl).header('etag', etag).header('last-modified', stats.mtime.toUTCString());
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply
      .type(CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream')
      .header('content-length', stats.size)
      .send(createReadStream(path));
  }

  async function sendIndex(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const sent = await sendFile(request, reply, indexPath, REVALIDATE);
    if (sent) return sent;
    const detail = options.notBuiltDetail?.() ?? 'the console is not built: run `npm run build:console`';
    return sendError(reply.header('cache-control', 'no-store'), unavailable(detail, 10));
  }

  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const path = request.url.split('?')[0]!;
    const query = request.url.slice(path.length);
    // The router ignores trailing slashes; the console's relative URLs need the one after /console.
    if (path === '/console') return reply.redirect(`/console/${query}`, 301);
    const resolved = resolveConsolePath(dir, path.slice('/console/'.length));
    if (resolved.kind === 'not-found') return sendError(reply, new DomainError('not_found', 'not found'));
    if (resolved.kind === 'file') {
      const isAsset = resolved.path.startsWith(join(dir, 'assets') + sep);
      const sent = await sendFile(request, reply, resolved.path, isAsset ? IMMUTABLE : REVALIDATE);
      if (sent) return sent;
      // A missing asset is a 404, never index.html: a script tag must not get a page.
      if (isAsset) return sendError(reply, new DomainError('not_found', 'not found'));
    }
    // Every other path is a page of the console (client-side routing): each has a shareable URL.
    return sendIndex(request, reply);
  };
  // `/console` also matches `/console/` (the router ignores trailing slashes); the handler tells them apart.
  app.get('/console', { schema: { hide: true } }, serve);
  app.get('/console/*', { schema: { hide: true } }, serve);
}
