/**
 * Errors that workers, schedulers and stores emit during a test, collected instead of swallowed:
 * after each test the log must be empty. A test that provokes errors (stops Redis, corrupts a
 * job) takes the ones it expects with take(), and asserts on them; anything else fails the test.
 */
import assert from 'node:assert/strict';
import { afterEach } from 'node:test';

/**
 * What a worker (or scheduler) reports when it is closed before its wake subscription is up:
 * the close cuts the SUBSCRIBE short ("Connection is closed."; a cluster client still looking
 * for its nodes says "None of startup nodes is available"). The close provokes it, so a log
 * watching with `closing: CUT_SHORT_BY_CLOSE` drops it once close() has begun, and only then.
 */
export const CUT_SHORT_BY_CLOSE = /^ConnectionError: Redis at .*: (Connection is closed\.|None of startup nodes is available)$/;

interface Emitter {
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export interface ErrorLog {
  /**
   * Records every 'error' that `emitter` emits from now on; returns it. With `closing`, the
   * errors it matches are dropped once the emitter's close() has begun (see CUT_SHORT_BY_CLOSE).
   */
  watch<T extends Emitter>(emitter: T, opts?: { closing?: RegExp }): T;
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
    watch(emitter, opts = {}) {
      let closing = false;
      const expected = opts.closing;
      const closable = emitter as Emitter & { close?: (...args: unknown[]) => Promise<unknown> };
      if (expected && typeof closable.close === 'function') {
        const close = closable.close.bind(emitter);
        closable.close = (...args: unknown[]) => {
          closing = true;
          return close(...args);
        };
      }
      emitter.on('error', (err) => {
        if (closing && expected?.test(`${err.name}: ${err.message}`)) return;
        seen.push(err);
      });
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
