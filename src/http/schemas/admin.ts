import { Type } from 'typebox';
import type { Account } from '../../domain/accounts/account.js';
import type { OAuthClient } from '../../domain/accounts/oauth-client.js';
import { iso } from '../../domain/time.js';
import { IDS, SAMPLE_ACCOUNT, SAMPLE_CLIENT } from './samples.js';

export const AccountSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    active: Type.Boolean({ description: "false: the account's clients can no longer obtain tokens" }),
    isOperator: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Account', examples: [SAMPLE_ACCOUNT] },
);

export const AccountCreateSchema = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false, title: 'AccountCreate', examples: [{ name: 'acme' }] });

export const AccountPatchSchema = Type.Object(
  { name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })), active: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, title: 'AccountUpdate', examples: [{ active: false }, { name: 'acme-retail' }] },
);

export const AccountParamsSchema = Type.Object({ id: Type.String({ maxLength: 200 }) });
export const ClientParamsSchema = Type.Object({ id: Type.String({ maxLength: 200 }), clientId: Type.String({ maxLength: 200 }) });

const ScopesInput = Type.Union([Type.Array(Type.String({ maxLength: 100 }), { maxItems: 20 }), Type.String({ maxLength: 1000 })], {
  description: 'an array of scopes or one space-separated string',
});

export const ClientCreateSchema = Type.Object(
  { scopes: Type.Optional(ScopesInput) },
  { additionalProperties: false, title: 'ClientCreate', examples: [{ scopes: ['requests:write', 'requests:read', 'events:read'] }, {}] },
);

export const ClientPatchSchema = Type.Object(
  { active: Type.Optional(Type.Boolean()), scopes: Type.Optional(ScopesInput) },
  { additionalProperties: false, title: 'ClientUpdate', examples: [{ active: false }, { scopes: 'requests:write requests:read' }] },
);

/** A client as listed: never any secret, not even its hash. */
export const ClientSchema = Type.Object(
  {
    client_id: Type.String(),
    accountId: Type.String(),
    scopes: Type.String({ description: 'space-separated' }),
    active: Type.Boolean(),
    previous_secret_valid_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Client', examples: [SAMPLE_CLIENT] },
);

export const IssuedClientSchema = Type.Object(
  {
    accountId: Type.String(),
    client_id: Type.String(),
    client_secret: Type.String({ description: 'shown once; only its hash is stored' }),
    scopes: Type.String({ description: 'space-separated' }),
  },
  {
    title: 'IssuedClient',
    description: 'a client as created: with its secret, shown this once',
    examples: [{ accountId: IDS.account, client_id: IDS.client, client_secret: 'rrs_cs_example-only-Wq3pV8yJ2mK5tR9xL4nB7dF1hG6sA0cE', scopes: SAMPLE_CLIENT.scopes }],
  },
);

export const RotatedSecretSchema = Type.Object(
  {
    client_id: Type.String(),
    client_secret: Type.String({ description: 'shown once' }),
    previous_secret_valid_until: Type.String({ format: 'date-time' }),
  },
  {
    title: 'RotatedClientSecret',
    examples: [{ client_id: IDS.client, client_secret: 'rrs_cs_example-only-Zr8tN2wQ5yH1kM4pV7bX3jC6gF9dS0aL', previous_secret_valid_until: '2024-07-02T12:00:00.000Z' }],
  },
);

export function accountToJson(account: Account) {
  return { id: account.id, name: account.name, active: account.active, isOperator: account.isOperator, createdAt: iso(account.createdAt) };
}

export function clientToJson(client: OAuthClient) {
  return {
    client_id: client.clientId,
    accountId: client.accountId,
    scopes: client.scopes.join(' '),
    active: client.active,
    previous_secret_valid_until: client.previousSecretExpiresAt === null ? null : iso(client.previousSecretExpiresAt),
    createdAt: iso(client.createdAt),
    updatedAt: iso(client.updatedAt),
  };
}
