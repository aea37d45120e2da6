import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ms } from '../../src/cli/context.js';

describe('CLI durations', () => {
  test('read in the unit a person would use: ms, s, min, h, then days', () => {
    assert.equal(ms(250), '250 ms');
    assert.equal(ms(90_000), '90.0 s');
    assert.equal(ms(30 * 60_000), '30.0 min');
    assert.equal(ms(5 * 3_600_000), '5.0 h');
    assert.equal(ms(27_181 * 3_600_000), '1132.5 d');
    assert.equal(ms(-3 * 86_400_000), '-3.0 d');
    assert.equal(ms(undefined), '—');
  });
});
