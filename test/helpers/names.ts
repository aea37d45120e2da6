/** Unique names, so that tests sharing one redis-server never see each other's keys. */
import { randomBytes } from 'node:crypto';

export function uniqueName(label = 't'): string {
  return `${label}-${randomBytes(5).toString('hex')}`;
}
