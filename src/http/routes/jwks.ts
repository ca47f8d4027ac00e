import type { TypedApp } from '../typed-app.js';
import { Type } from 'typebox';
import type { KeyStore } from '../../services/key-store.js';
import { IDS } from '../schemas/samples.js';

/** The public keys that verify our access tokens (RFC 7517), including keys being rotated out. */
export async function jwksRoute(app: TypedApp, deps: { keys: Pick<KeyStore, 'jwks'> }): Promise<void> {
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['oauth'],
        operationId: 'getJwks',
        description: 'The JSON Web Key Set whose keys verify the access tokens this service issues, including keys being rotated out (`rewards keys rotate`). Cached for 5 minutes. Public.',
        summary: 'The public keys that verify access tokens (RFC 7517 JWK Set)',
        response: {
          200: Type.Object(
            { keys: Type.Array(Type.Object({}, { additionalProperties: true, title: 'JsonWebKey', description: 'a public key (RFC 7517): `kty`, `crv`, `x`, `kid`, `alg`, `use`' })) },
            { title: 'JsonWebKeySet', examples: [{ keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: IDS.signingKey, alg: 'EdDSA', use: 'sig' }] }] },
          ),
        },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return deps.keys.jwks();
    },
  );
}
