import type { TypedApp } from '../typed-app.js';
import type { FastifyRequest } from 'fastify';
import { toRotatedSecretResource, toSigningSecretResource } from '../../domain/subscriptions/mapping.js';
import { loadSigningSecrets, parseRotationOverlap, rotateSigningSecret, type SigningSecretsContext } from '../../services/signing-secrets.js';
import { OperatorQuerySchema, ROTATION_OVERLAP_DOC, RotateSecretBodySchema, SigningSecretSchema } from '../schemas/subscription.js';

/**
 * The account's default signing secret: it signs notifications sent to per-request callback URLs
 * (`registeredCallbackUrl` / `processedCallbackUrl`), which have no subscription of their own.
 * Created on first use; rotation keeps the previous secret signing for the overlap chosen (default 24 h).
 */
export async function signingSecretRoutes(app: TypedApp, deps: SigningSecretsContext): Promise<void> {
  const common = { tags: ['subscriptions'], security: [{ bearerAuth: [] }], querystring: OperatorQuerySchema, response: { 200: SigningSecretSchema } };

  app.get(
    '/signing-secret',
    {
      config: { scope: 'subscriptions:read', secretBearing: true },
      schema: {
        ...common,
        operationId: 'getSigningSecret',
        description:
          "The account's default secret, which signs notifications sent to per-request callback URLs (`registeredCallbackUrl`, `processedCallbackUrl`) that no subscription of the account uses. A per-request URL that a subscription uses is signed with that subscription's secret: one secret per receiver URL.",
        summary: 'The account’s default signing secret (for per-request callback URLs without subscriptions)',
      },
    },
    async (request: FastifyRequest) => {
      const secrets = await loadSigningSecrets(deps.db, deps.box, { accountId: request.auth.accountId }, deps.clock());
      return toSigningSecretResource(secrets);
    },
  );

  app.post(
    '/signing-secret/rotate',
    {
      config: { scope: 'subscriptions:write', secretBearing: true, optionalBody: true },
      schema: {
        ...common,
        operationId: 'rotateSigningSecret',
        description: `A new default signing secret. ${ROTATION_OVERLAP_DOC}`,
        summary: 'Replace the account’s default signing secret; the previous one keeps signing for the overlap chosen (default 24 h)',
        body: RotateSecretBodySchema,
      },
    },
    async (request) => {
      const overlapMs = parseRotationOverlap(request.body.overlap, 'body.overlap');
      const rotated = await rotateSigningSecret(deps.db, deps.box, { accountId: request.auth.accountId, subscriptionId: null }, deps.clock(), overlapMs);
      // Only a subscription can be missing; an account's default always rotates.
      return toRotatedSecretResource(rotated!);
    },
  );
}
