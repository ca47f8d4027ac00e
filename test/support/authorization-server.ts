import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createLocalJWKSet, createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, type JWK, type JWTPayload } from 'jose';
import type { TlsReceiverOptions } from './receivers.js';

/**
 * A real OAuth2 authorization server (oidc-provider) on 127.0.0.1 with one client-credentials
 * client. Resource indicators (RFC 8707) give its JWT access tokens (RFC 9068) an `aud`, so a
 * receiver can check the audience against the server's JWKS. Behind HTTPS it can require a
 * client certificate, to prove token requests present the service's mTLS identity.
 */

interface TokenRequestRecord {
  /** Form parameters as the server parsed them (secrets included: tests only). */
  params: Record<string, unknown>;
  status: number;
  clientCertificateCN?: string;
}

export interface AuthorizationServer {
  issuer: string;
  tokenUrl: string;
  jwksUrl: string;
  clientId: string;
  clientSecret: string;
  /** The resource (audience) the server knows. */
  audience: string;
  tokenRequests: TokenRequestRecord[];
  /** Verifies a bearer token as a resource server would: signature, issuer, audience, type. */
  verifyAccessToken(token: string): Promise<JWTPayload>;
  close(): Promise<void>;
}

export interface AuthorizationServerOptions {
  audience?: string;
  accessTokenTtlSeconds?: number;
  /** Serve over HTTPS; with `requireClientCertificate` the handshake needs a client certificate. */
  tls?: TlsReceiverOptions;
}

/** The little of oidc-provider's API used here; the package ships no type declarations. */
interface KoaContext {
  method: string;
  path: string;
  status: number;
  req: IncomingMessage;
  oidc?: { body?: Record<string, unknown> };
}
interface OidcProvider {
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  callback(): (request: IncomingMessage, response: unknown) => void;
}
interface OidcProviderModule {
  default: (new (issuer: string, configuration: Record<string, unknown>) => OidcProvider) & {
    errors: { InvalidTarget: new () => Error };
  };
}
/**
 * oidc-provider's storage for one server: a Map per model. Client-credentials JWTs are not stored,
 * so nothing here needs expiry or grant indexes; naming a storage also keeps the provider from
 * warning that its quick-start development adapter is in use.
 */
function mapStorage() {
  const models = new Map<string, Map<string, Record<string, unknown>>>();
  return class ModelStorage {
    private readonly items: Map<string, Record<string, unknown>>;
    constructor(model: string) {
      this.items = models.get(model) ?? new Map();
      models.set(model, this.items);
    }
    async upsert(id: string, payload: Record<string, unknown>) {
      this.items.set(id, payload);
    }
    async find(id: string) {
      return this.items.get(id);
    }
    async findByUid() {
      return undefined;
    }
    async findByUserCode() {
      return undefined;
    }
    async consume(id: string) {
      const payload = this.items.get(id);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      this.items.delete(id);
    }
    async revokeByGrantId() {}
  };
}

// A computed specifier keeps TypeScript from looking for declarations that do not exist.
const OIDC_PROVIDER = 'oidc-provider';

function clientCommonName(request: IncomingMessage): string | undefined {
  const socket = request.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return undefined;
  const cn = socket.getPeerCertificate().subject?.CN;
  return Array.isArray(cn) ? cn[0] : cn || undefined;
}

export async function startAuthorizationServer(options: AuthorizationServerOptions = {}): Promise<AuthorizationServer> {
  const audience = options.audience ?? 'https://callbacks.example.test/notifications';
  const clientId = 'reward-service-outbound';
  const clientSecret = 'outbound-secret-0123456789abcdef';
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const privateJwk: JWK = { ...(await exportJWK(privateKey)), kid: 'as-key-1', alg: 'RS256', use: 'sig' };
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'as-key-1', alg: 'RS256', use: 'sig' };

  const server: Server = options.tls
    ? createHttpsServer({
        key: options.tls.key,
        cert: options.tls.cert,
        ...(options.tls.ca ? { ca: options.tls.ca } : {}),
        requestCert: Boolean(options.tls.requireClientCertificate),
        rejectUnauthorized: Boolean(options.tls.requireClientCertificate),
      })
    : createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;

  const { default: Provider } = (await import(OIDC_PROVIDER)) as OidcProviderModule;
  const provider = new Provider(issuer, {
    adapter: mapStorage(),
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [privateJwk] },
    scopes: ['notifications'],
    // The lifetime comes from the resource server; stating it here also silences a setup notice.
    ttl: { ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A token request without `resource` still gets this audience.
        defaultResource: () => audience,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== audience) throw new Provider.errors.InvalidTarget();
          return {
            scope: 'notifications',
            audience,
            accessTokenTTL: options.accessTokenTtlSeconds ?? 300,
            accessTokenFormat: 'jwt',
          };
        },
      },
    },
  });

  const tokenRequests: TokenRequestRecord[] = [];
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.method === 'POST' && ctx.path === '/token') {
      tokenRequests.push({ params: { ...(ctx.oidc?.body ?? {}) }, status: ctx.status, clientCertificateCN: clientCommonName(ctx.req) });
    }
  });
  server.on('request', provider.callback());

  const keys = options.tls ? createLocalJWKSet({ keys: [publicJwk] }) : createRemoteJWKSet(new URL(`${issuer}/jwks`));
  return {
    issuer,
    tokenUrl: `${issuer}/token`,
    jwksUrl: `${issuer}/jwks`,
    clientId,
    clientSecret,
    audience,
    tokenRequests,
    async verifyAccessToken(token) {
      const { payload } = await jwtVerify(token, keys, { issuer, audience, typ: 'at+jwt' });
      return payload;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
