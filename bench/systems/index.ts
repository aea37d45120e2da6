import { bullmq } from './bullmq.js';
import { delayq } from './delayq.js';
import { naive } from './naive.js';
import type { System } from './system.js';

/** Every system the benchmark knows, in table order. */
export function systems(): System[] {
  return [delayq, bullmq, naive(10), naive(1000)];
}
