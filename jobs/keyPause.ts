import type { Queue } from 'bullmq';
import type { SvcKeyPause } from '../src/svc/client.ts';

/**
 * An API key's pause after a 40001, kept as the rate limit of the key's poll queue: BullMQ stops
 * handing out that queue's jobs until it ends, in every process, and the daemon's other calls
 * with the key (fetching the intents of webhooks) read the same Redis key before they send
 * anything. The CLI's one-off calls do not: they wait out a 40001 in the client instead.
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
      const wait = Math.max(1, Math.ceil(ms));
      // Only ever longer: a 40001 without retry_after (1 s) must not cut short a 30 s pause that
      // another process was asked for. (Two answers in the same instant may still race; the
      // shorter then wins, and the next 40001 sets it again.)
      if ((await queue.getRateLimitTtl(FORCED)) < wait) await queue.rateLimit(wait);
    },
  };
}
