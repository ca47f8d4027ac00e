import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

// The one module-level mutable state the service keeps, on purpose: ids must be unique and sorted
// across everything one process makes, so two apps built in one process (the tests do that) must
// share the generator rather than own one each, as they own their caches and queues (deps.ts).

/**
 * Random bytes drawn from the CSPRNG 4 KiB at a time, as `randomUUID` does: a call per id made
 * `randomFillSync` a visible share of the worker's CPU (every request, notification and job gets
 * an id).
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomTenBytes(target: Buffer): void {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  pool.copy(target, 0, poolOffset, poolOffset + 10);
  poolOffset += 10;
}

/** The last id's time and random part: ids made within the same millisecond count up from it. */
let lastTime = -1;
const lastRandom = Buffer.alloc(10);

/** Adds one to the 80-bit big-endian number; false when it wrapped around. */
function increment(bytes: Buffer): boolean {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 255) {
      bytes[i]! += 1;
      return true;
    }
    bytes[i] = 0;
  }
  return false;
}

/**
 * `prefix_` + 26 base32 characters: 48 bits of milliseconds then 80 random bits, so ids sort by
 * creation time (cursor paging, index locality) and say what they name (`req_…`, `sub_…`).
 *
 * Within one millisecond the random part counts up from the first id's (ULID's monotonic mode),
 * so ids made together also sort together. With 80 fresh random bits per id, a batch made in one
 * millisecond (a group commit of requests, the notifications and jobs of a processing batch) was
 * scattered across every index on those ids: deleting a batch of finished jobs touched a leaf page
 * per job in each of their indexes, and each page is a WAL write on SQLite. Uniqueness across processes
 * still rests on the 80 random bits each millisecond starts from.
 */
export function newId(prefix: string, now = Date.now()): string {
  if (now !== lastTime || !increment(lastRandom)) {
    randomTenBytes(lastRandom);
    lastTime = now;
  }
  let out = timePart(now);
  let bits = 0;
  let value = 0;
  for (const byte of lastRandom) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31]!;
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return `${prefix}_${out}`;
}

/** The lowest id `newId(prefix, at)` can make: every id made before `at` sorts below it. */
export function firstIdAt(prefix: string, at: number): string {
  return `${prefix}_${timePart(Math.max(0, at))}${ALPHABET[0]!.repeat(16)}`;
}

/** The 10 base32 characters of an id's milliseconds, most significant first. */
function timePart(ms: number): string {
  let out = '';
  let time = ms;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[time % 32]! + out;
    time = Math.floor(time / 32);
  }
  return out;
}

/** The millisecond an id was made at (its first 10 characters after the prefix); undefined when they are not an id's time. */
export function idTime(id: string): number | undefined {
  const start = id.indexOf('_') + 1;
  const part = id.slice(start, start + 10);
  if (start === 0 || part.length !== 10) return undefined;
  let time = 0;
  for (const char of part) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return undefined;
    time = time * 32 + digit;
  }
  return time;
}
