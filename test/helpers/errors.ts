/**
 * Errors that workers, schedulers and stores emit during a test, collected instead of swallowed:
 * after each test the log must be empty. A test that provokes errors (stops Redis, corrupts a
 * job) takes the ones it expects with take(), and asserts on them; anything else fails the test.
 */
import assert from 'node:assert/strict';
import { afterEach } from 'node:test';

interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export interface ErrorLog {
  /** Records every 'error' that `emitter` emits from now on; returns it. */
  watch<T extends Emitter>(emitter: T): T;
  /** Removes and returns the errors recorded so far that `expected` accepts (its message matches). */
  take(expected: RegExp | ((err: Error) => boolean)): Error[];
  /** The errors recorded so far in this test. */
  readonly seen: readonly Error[];
}

/** An error log for the file's tests: each test must end with nothing in it that it did not take. */
export function useErrorLog(): ErrorLog {
  let seen: Error[] = [];
  afterEach(() => {
    const left = seen;
    seen = [];
    assert.deepEqual(
      left.map((e) => `${e.name}: ${e.message}`),
      [],
      'errors emitted during the test that it did not expect',
    );
  });
  return {
    watch(emitter) {
      emitter.on('error', (err) => seen.push(err));
      return emitter;
    },
    take(expected) {
      const accepts = typeof expected === 'function' ? expected : (e: Error) => expected.test(`${e.name}: ${e.message}`);
      const taken = seen.filter(accepts);
      seen = seen.filter((e) => !accepts(e));
      return taken;
    },
    get seen() {
      return seen;
    },
  };
}
