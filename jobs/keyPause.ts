import type { Queue } from 'bullmq';
import type { SvcKeyPause } from '../src/svc/client.ts';

/**
 * An API key's pause after a 40001, kept as the rate limit of the key's poll queue: BullMQ stops
 * handing out that queue's jobs until it ends, in every process, and the key's other calls
 * (webhook processing, intent creation) read the same Redis key before they send anything.
 *
 * `queue.rateLimit(ms)` sets the limiter key to MAX_SAFE_INTEGER for ms; the poll queue's ordinary
 * limiter counts jobs there and never reaches that value, so only a forced pause is read as one.
 * A "not paused" answer is reused for CHECK_EVERY_MS, so a busy worker asks Redis a few times a
 * second rather than once per request: a pause set by another process is seen that much later.
 */
const CHECK_EVERY_MS = 100;
const FORCED = Number.MAX_SAFE_INTEGER;

export function queueKeyPause(queue: Queue): SvcKeyPause {
  let clearUntil = 0;
  return {
    async remainingMs() {
      if (Date.now() < clearUntil) return 0;
      const ttl = await queue.getRateLimitTtl(FORCED);
      if (ttl <= 0) clearUntil = Date.now() + CHECK_EVERY_MS;
      return Math.max(0, ttl);
    },
    async start(ms) {
      clearUntil = 0;
      await queue.rateLimit(Math.max(1, Math.ceil(ms)));
    },
  };
}
