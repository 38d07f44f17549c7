import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

/** The shared Redis and a key prefix of the calling test's own, so tests never see each other's keys. */
export function testRedis(label = 'test'): { url: string; prefix: string } {
  return { url: inject('redisUrl'), prefix: `sbtest:${label}:${randomBytes(4).toString('hex')}:` };
}
