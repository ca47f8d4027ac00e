import type { FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { Logger } from '../logger.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

/**
 * The Fastify instance every route module gets: with the TypeBox type provider, a route's
 * params, querystring and body are typed from its schema, so handlers need no `as` casts and no
 * hand-written generics. buildApp and buildOpsApp make it with `withTypeProvider`.
 */
export type TypedApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger, TypeBoxTypeProvider>;
