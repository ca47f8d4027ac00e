// needs: nothing
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { editDistance } from '../../src/domain/edit-distance.js';

describe('edit distance, behind every "did you mean"', () => {
  it('counts insertions, deletions and substitutions', () => {
    assert.equal(editDistance('requests:write', 'requests:write'), 0);
    assert.equal(editDistance('request:write', 'requests:write'), 1);
    assert.equal(editDistance('stauts', 'status'), 2);
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('abc', ''), 3);
  });
});
