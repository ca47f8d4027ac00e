import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../logger.js';
import type { Db } from '../storage/database.js';
import { databaseFailureReason, isDatabaseUnavailable } from '../storage/database-errors.js';
import { writeReadinessProbe } from '../storage/repositories/readiness-probe.js';

/**
 * Whether an error means the database cannot serve (unreachable, read-only, disk full): the API
 * answers those 503 with Retry-After rather than 500, and readiness counts them. The decision is
 * storage's; the HTTP layer asks here.
 */
export { isDatabaseUnavailable };

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface ReadinessOptions {
  /** A probe's outcome is reused this long: load balancers ask every few seconds, from several places. */
  probeEveryMs?: number;
  /** A write the database refused (disk full, read-only …) keeps the process not ready this long. */
  refusalHoldMs?: number;
  /** A probe that has not answered within this is a failure ("does not answer"). */
  probeTimeoutMs?: number;
  /** SQLite: less room than this on the database's file system is a full disk. */
  minFreeBytes?: number;
}

/**
 * `/health/ready`: whether this process can serve, which needs a database that takes writes,
 * not one that merely answers `select 1` (a full disk answers reads and refuses every write).
 * Ready unless:
 * - the probe fails: a real write (row 1 of readiness_probe, one upsert), made at most once per
 *   `probeEveryMs` and shared by every caller meanwhile, and on SQLite the room left on the
 *   database's file system (below `minFreeBytes` the next request may not fit);
 * - a real write failed because the database could not serve (the API's 503s, the worker's failed
 *   batches: `noteFailure`) within the last `refusalHoldMs`. A probe's one small row can still
 *   fit where requests do not (SQLite reuses its WAL's space; a table page with room left), so the
 *   refusals of real writes count too.
 * It comes back by itself: once no write was refused for `refusalHoldMs` and the probe succeeds.
 */
export class DatabaseReadiness {
  readonly #probeEveryMs: number;
  readonly #refusalHoldMs: number;
  readonly #probeTimeoutMs: number;
  readonly #minFreeBytes: number;
  #probed: { at: number; failure: string | undefined } | undefined;
  #probing: Promise<void> | undefined;
  /** The probe's write: one at a time, even when one outlives its timeout (a stuck database must not collect them). */
  #writing: Promise<string | undefined> | undefined;
  #refused: { at: number; reason: string } | undefined;
  #lastReported: Readiness = { ready: true };

  constructor(
    private readonly deps: { db: Db; sqliteFile: string | undefined; clock: () => number; log: Logger },
    options: ReadinessOptions = {},
  ) {
    this.#probeEveryMs = options.probeEveryMs ?? 1000;
    this.#refusalHoldMs = options.refusalHoldMs ?? 10_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 2000;
    this.#minFreeBytes = options.minFreeBytes ?? 1024 * 1024;
  }

  /** A statement or transaction failed: remembered when it means the database cannot serve right now. */
  noteFailure(error: unknown): void {
    if (isDatabaseUnavailable(error)) this.#refused = { at: this.deps.clock(), reason: databaseFailureReason(error) };
  }

  async check(): Promise<Readiness> {
    const now = this.deps.clock();
    if (!this.#probed || now - this.#probed.at >= this.#probeEveryMs) {
      this.#probing ??= this.#probe().finally(() => (this.#probing = undefined));
      await this.#probing;
    }
    const refused = this.#refused && this.deps.clock() - this.#refused.at < this.#refusalHoldMs ? this.#refused : undefined;
    const failure = this.#probed?.failure;
    const state: Readiness = failure
      ? { ready: false, reason: failure }
      : refused
        ? { ready: false, reason: `a write was refused ${Math.max(0, Math.round((this.deps.clock() - refused.at) / 1000))} s ago: ${refused.reason}` }
        : { ready: true };
    this.#report(state);
    return state;
  }

  async #probe(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`the database did not answer a write within ${this.#probeTimeoutMs} ms`), this.#probeTimeoutMs);
    });
    this.#writing ??= this.#write().finally(() => (this.#writing = undefined));
    const failure = await Promise.race([this.#writing, timeout]);
    clearTimeout(timer);
    this.#probed = { at: this.deps.clock(), failure };
  }

  /** The probe itself: undefined when the database took the write, else why not. */
  async #write(): Promise<string | undefined> {
    try {
      if (this.deps.sqliteFile) {
        const room = await statfs(dirname(this.deps.sqliteFile));
        if (room.bavail * room.bsize < this.#minFreeBytes) return `the database's disk is full (${room.bavail * room.bsize} bytes free)`;
      }
      await writeReadinessProbe(this.deps.db, this.deps.clock());
      return undefined;
    } catch (error) {
      this.deps.log.debug({ err: error }, 'readiness probe failed');
      return databaseFailureReason(error);
    }
  }

  /** Logs a change of state once, not every probe. */
  #report(state: Readiness): void {
    const before = this.#lastReported;
    this.#lastReported = state;
    if (!state.ready && before.ready) this.deps.log.warn({ reason: state.reason }, 'not ready: the database does not take writes');
    else if (state.ready && !before.ready) this.deps.log.info('ready again: the database takes writes');
  }
}
