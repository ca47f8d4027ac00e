import type { onRequestHookHandler } from 'fastify';
import type { TypedApp } from './typed-app.js';

/**
 * Answers that carry a secret (a client secret, a `whsec_` signing secret, a console link's
 * one-time code) must never be stored by a cache or a browser: RFC 9111 `no-store`, and
 * `Pragma: no-cache` for HTTP/1.0 caches, as RFC 6749 §5.1 asks of token answers. A route says so
 * once, `config: { secretBearing: true }`, and the hook below adds the headers; a test walks the
 * route table and refuses a route whose answer schema can hold a secret without the declaration
 * (test/http/secret-bearing-answers.test.ts). The token endpoints set them themselves, on the
 * server's fast path too (token-endpoint.ts).
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's answer carries a secret: it is sent with `Cache-Control: no-store` and `Pragma: no-cache`. */
    secretBearing?: boolean;
  }
}

const NO_STORE_HEADERS: Readonly<Record<string, string>> = { 'cache-control': 'no-store', pragma: 'no-cache' };

const noStore: onRequestHookHandler = function noStore(_request, reply, done) {
  reply.headers(NO_STORE_HEADERS);
  done();
};

/** Gives every route declared `secretBearing` (registered after this call) the no-store headers. */
export function answerSecretsUncached(app: TypedApp): void {
  app.addHook('onRoute', (route) => {
    if (!route.config?.secretBearing) return;
    route.onRequest = [...[route.onRequest ?? []].flat(), noStore];
  });
}
