// needs: nothing
import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { firstIdAt, idTime, newId } from '../../src/domain/ids.js';

describe('newId', () => {
  const timePart = (id: string) => id.split('_')[1]!.slice(0, 10);

  it('prefix, 26 Crockford base32 characters, the time first', () => {
    const id = newId('req', Date.UTC(2026, 10, 23));
    assert.match(id, /^req_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(timePart(id), timePart(newId('req', Date.UTC(2026, 10, 23))));
    assert.ok(newId('req', Date.UTC(2026, 10, 24)) > id, 'a later millisecond sorts later');
  });

  it('ids made in the same millisecond count up: unique and in the order they were made', () => {
    const now = Date.now();
    const ids = Array.from({ length: 50_000 }, (_, i) => newId('msg', now + Math.floor(i / 10_000)));
    assert.equal(new Set(ids).size, ids.length);
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `${ids[i - 1]} < ${ids[i]}`);
  });

  it('each millisecond starts from fresh random bits', () => {
    const a = newId('x', 1_000);
    newId('x', 2_000);
    const b = newId('x', 1_000);
    assert.notEqual(a.slice(12), b.slice(12), 'returning to a millisecond does not continue its old count');
  });
});

test('firstIdAt: every id made before the time sorts below it, every id made at or after it does not', () => {
  const at = Date.UTC(2026, 0, 1);
  const boundary = firstIdAt('msg', at);
  for (const t of [at - 86_400_000, at - 1]) assert.ok(newId('msg', t) < boundary, `an id of ${t}`);
  for (const t of [at, at + 1, at + 86_400_000]) assert.ok(newId('msg', t) >= boundary, `an id of ${t}`);
  assert.equal(boundary.length, newId('msg', at).length);
});

test('idTime: the millisecond an id was made at, read back; undefined for what is not an id', () => {
  for (const at of [0, 1, Date.UTC(2026, 10, 26, 12, 34, 56, 789), 2 ** 48 - 1]) {
    assert.equal(idTime(newId('msg', at)), at);
    assert.equal(idTime(firstIdAt('msg', at)), at);
  }
  assert.equal(idTime('msg_one'), undefined);
  assert.equal(idTime('msg_000000000u0000000000000000'), undefined, 'u is not in the alphabet');
  assert.equal(idTime('nounderscore0000000000'), undefined);
});
