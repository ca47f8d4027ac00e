import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

/**
 * Random bytes drawn from the CSPRNG 4 KiB at a time, as `randomUUID` does: a call per id made
 * `randomFillSync` 3 % of the worker's CPU (every request, notification and job gets an id).
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;
function randomTenBytes(): Buffer {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  poolOffset += 10;
  return pool.subarray(poolOffset - 10, poolOffset);
}

/**
 * `prefix_` + 26 base32 characters: 48 bits of milliseconds then 80 random bits, so ids sort by
 * creation time (cursor paging, index locality) and say what they name (`req_…`, `sub_…`).
 */
export function newId(prefix: string, now = Date.now()): string {
  let out = '';
  let time = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[time % 32]! + out;
    time = Math.floor(time / 32);
  }
  const random = randomTenBytes();
  let bits = 0;
  let value = 0;
  for (const byte of random) {
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
