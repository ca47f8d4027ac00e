import type { Db, Executor } from '../storage/database.js';
import { listTokenRevocations, saveTokenRevocation, tokenRevocationsChangedSince, type TokenRevocationRow } from '../storage/repositories/token-revocations.js';
import { CONSOLE_LINK_CLIENT_PREFIX } from '../domain/tokens/console-link-code.js';
import { consoleLinkIdOf, refusalOf, revocationAfter, type Revocation, type RevocationChange, type RevocationKind } from '../domain/tokens/revocation.js';
import type { Logger } from '../logger.js';

/**
 * A refresh reads the rows changed since the previous one started, minus this much: a row
 * committed late, or written by a process whose clock is behind this one's, is still read. The
 * rows of the last minute are few (operators' changes), and applying one again changes nothing.
 */
const REFRESH_OVERLAP_MS = 60_000;
/** Everything is read again this often: drops the rows that expired, and bounds the effect of a clock far off. */
const FULL_RELOAD_MS = 5 * 60_000;

export interface TokenRevocationsOptions {
  /** AUTH_REFRESH_INTERVAL: how often the rows other processes wrote are read. */
  refreshIntervalMs: number;
  /** The longest a token can live (TOKEN_TTL or a console link's 24 h): how long a row must outlive what it refuses. */
  tokenLifetimeMs: number;
  clock: () => number;
  log: Logger;
}

/**
 * The tokens that verify but must be refused (docs/tokens.md, "Deactivation"): one per process,
 * built in deps.ts. Every protected request asks `refusal` — two lookups in maps that hold only
 * the subjects cut, no database read. The maps are loaded at the first request, then refreshed
 * every AUTH_REFRESH_INTERVAL from the `token_revocations` rows that changed (one indexed read,
 * usually of nothing); the process that makes a change applies it at once (`record` + `apply`).
 * So a deactivation in any process holds in every process within the interval.
 */
export class TokenRevocations {
  #accounts = new Map<string, Revocation>();
  /** By the token's `client_id`: an OAuth client's id, or `console-link:cln_…` for a console link's session. */
  #clients = new Map<string, Revocation>();
  #loaded: Promise<void> | undefined;
  #ready = false;
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;
  /** Where the next refresh reads from (the writer's clock), and when everything was last read. */
  #lastRefreshStart = 0;
  #lastFullLoad = 0;
  /** Rows this process applied while a refresh was reading: applied again after it, as they may be newer than what it read. */
  #appliedDuringRefresh: TokenRevocationRow[] | undefined;
  #closed = false;

  constructor(
    private readonly db: Db,
    private readonly options: TokenRevocationsOptions,
  ) {}

  /** Whether the first load is done (then `refusal` answers without waiting). */
  get ready(): boolean {
    return this.#ready;
  }

  /** Loads every revocation and starts the refreshes; the first protected request waits for it, once. */
  load(): Promise<void> {
    this.#loaded ??= this.#reload().then(() => {
      this.#ready = true;
      this.#schedule();
    });
    this.#loaded.catch(() => (this.#loaded = undefined));
    return this.#loaded;
  }

  /** Why the token must be refused (an RFC 6750 `error_description`), or undefined when it may be used. */
  refusal(token: { clientId: string; accountId: string; issuedAt: number }): string | undefined {
    if (this.#accounts.size > 0) {
      const refused = refusalOf('account', this.#accounts.get(token.accountId), token.issuedAt);
      if (refused) return refused;
    }
    if (this.#clients.size === 0) return undefined;
    return refusalOf(consoleLinkIdOf(token.clientId) === undefined ? 'client' : 'console-link', this.#clients.get(token.clientId), token.issuedAt);
  }

  /** Writes the revocation a change leaves, in the transaction of that change; `apply` the result once it committed. */
  async record(tx: Executor, kind: RevocationKind, subjectId: string, change: RevocationChange): Promise<TokenRevocationRow> {
    const now = this.options.clock();
    const revocation = revocationAfter(change, now);
    const row: TokenRevocationRow = {
      kind,
      subject_id: subjectId,
      refused: revocation.refused,
      issued_before: revocation.issuedBefore,
      changed_at: now,
      // An inactive subject's row holds while it is inactive; the others only as long as a token they refuse can live.
      expires_at: change === 'deactivated' ? null : now + this.options.tokenLifetimeMs,
    };
    await saveTokenRevocation(tx, row);
    return row;
  }

  /** After this process committed a change: it holds here now, not at the next refresh. */
  apply(rows: TokenRevocationRow[]): void {
    this.#applyRows(rows);
    this.#appliedDuringRefresh?.push(...rows);
  }

  /** Reads the rows that changed (or, every few minutes, all of them). Runs on the timer; tests call it to skip the wait. */
  refresh(): Promise<void> {
    if (!this.#ready) return this.load();
    this.#refreshing ??= (async () => {
      try {
        if (this.options.clock() - this.#lastFullLoad >= FULL_RELOAD_MS) await this.#reload();
        else await this.#readChanges();
      } catch (error) {
        // The last state stays in force: a process that cannot read the database cannot serve much else either.
        this.options.log.warn({ err: error }, 'could not refresh the token revocations; retrying at the next interval');
      } finally {
        this.#refreshing = undefined;
      }
    })();
    return this.#refreshing;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#refreshing;
    await this.#loaded?.catch(() => undefined);
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => void this.refresh().finally(() => this.#schedule()), this.options.refreshIntervalMs);
    // Never what keeps a process alive (a CLI command that built the dependencies ends when it is done).
    this.#timer.unref();
  }

  async #reload(): Promise<void> {
    const started = this.options.clock();
    await this.#read(
      () => listTokenRevocations(this.db, started),
      (rows) => {
        this.#accounts = new Map();
        this.#clients = new Map();
        this.#applyRows(rows);
      },
    );
    this.#lastRefreshStart = started;
    this.#lastFullLoad = started;
  }

  async #readChanges(): Promise<void> {
    const started = this.options.clock();
    await this.#read(
      () => tokenRevocationsChangedSince(this.db, this.#lastRefreshStart - REFRESH_OVERLAP_MS),
      (rows) => this.#applyRows(rows),
    );
    this.#lastRefreshStart = started;
  }

  /**
   * Runs a read and uses its rows; what this process applied while the read ran is applied again
   * after them, in the same synchronous step: it may be newer than what the read saw.
   */
  async #read(read: () => Promise<TokenRevocationRow[]>, use: (rows: TokenRevocationRow[]) => void): Promise<void> {
    const appliedMeanwhile: TokenRevocationRow[] = [];
    this.#appliedDuringRefresh = appliedMeanwhile;
    try {
      use(await read());
      this.#applyRows(appliedMeanwhile);
    } finally {
      this.#appliedDuringRefresh = undefined;
    }
  }

  #applyRows(rows: TokenRevocationRow[]): void {
    for (const row of rows) {
      const map = row.kind === 'account' ? this.#accounts : this.#clients;
      const key = row.kind === 'console-link' ? `${CONSOLE_LINK_CLIENT_PREFIX}${row.subject_id}` : row.subject_id;
      if (row.refused === null && row.issued_before === null) map.delete(key);
      else map.set(key, { refused: row.refused, issuedBefore: row.issued_before });
    }
  }
}
