import type { Executor } from './database.js';
import { findClientForAuthentication, type ClientForAuthentication } from './repositories/oauth-clients.js';

/**
 * How long the token endpoint may reuse a client row it has read. A client that fetches a token
 * per call (common, and the case where the endpoint's speed matters) is then served from memory:
 * the row read was the largest cost of a token request. Changes made through this process's admin
 * API take effect at once (the admin routes call `forget`); changes made by another process
 * within this window: a secret rotated elsewhere is re-read on the first mismatch (see
 * `grantClientCredentials`), a client or account disabled elsewhere stops getting tokens after at
 * most this long, far less than the lifetime of the tokens it already holds.
 */
export const CLIENT_CACHE_MS = 1_000;

/** The token endpoint's cache of client rows with their account's state: one per process, built in deps.ts. */
export class ClientCache {
  readonly #byId = new Map<string, { client: ClientForAuthentication; readAt: number }>();
  /** Counts `forget`s: a read that began before one must not store what it read. */
  #generation = 0;

  constructor(private readonly db: Executor) {}

  /** The client through the cache; `fresh` reads the database (the presented secret did not match the cached row). */
  async get(clientId: string, now: number, fresh = false): Promise<ClientForAuthentication | undefined> {
    const cached = this.#byId.get(clientId);
    if (!fresh && cached && now - cached.readAt < CLIENT_CACHE_MS && now >= cached.readAt) return cached.client;
    const generation = this.#generation;
    const client = await findClientForAuthentication(this.db, clientId);
    if (generation !== this.#generation) return client;
    // Unknown ids are not cached: a flood of made-up ids must not grow the map.
    if (client) {
      if (this.#byId.size >= 10_000) this.#byId.clear();
      this.#byId.set(clientId, { client, readAt: now });
    } else {
      this.#byId.delete(clientId);
    }
    return client;
  }

  /** Changes with every `forget`: what is derived from client rows (the token endpoint's remembered answers) compares it. */
  get generation(): number {
    return this.#generation;
  }

  /** After any change to clients or accounts made in this process. */
  forget(): void {
    this.#generation += 1;
    this.#byId.clear();
  }
}
