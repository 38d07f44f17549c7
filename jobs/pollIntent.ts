import type { Job } from 'bullmq';
import { UnrecoverableError, Worker } from 'bullmq';
import { pollIntent } from '../src/payments/pollIntent.ts';
import { rateLimitWaitMs, SvcApiError } from '../src/svc/errors.ts';
import type { JobContext } from './jobContext.ts';
import { pollJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/**
 * polls-<store> queues: one poll, then the next one on the adaptive schedule. A 40001 pauses the
 * whole queue of that API key for retry_after (every process shares the pause; the client sets it,
 * jobs/keyPause.ts) and puts the job back; an error no retry can fix fails the job at once.
 */
export function pollProcessor(ctx: JobContext) {
  return async (job: Job): Promise<string> => {
    const { intentId, storeId } = pollJob.data.parse(job.data);
    let outcome: Awaited<ReturnType<typeof pollIntent>>;
    try {
      outcome = await pollIntent(ctx.payments, intentId, { scale: ctx.pollScale });
    } catch (err) {
      if (rateLimitWaitMs(err) !== undefined) {
        // The client has paused the key (this queue's rate limit) for as long as the service asked.
        ctx.metrics.polls.inc({ outcome: 'rate_limited' });
        throw Worker.RateLimitError();
      }
      ctx.metrics.polls.inc({ outcome: 'error' });
      if (err instanceof SvcApiError && !err.retryable) throw new UnrecoverableError(err.message);
      throw err;
    }
    ctx.metrics.polls.inc({ outcome: outcome.changed ? 'changed' : 'unchanged' });
    if (outcome.nextDelayMs !== null) await schedulePoll(ctx, storeId, intentId, outcome.nextDelayMs);
    return outcome.nextDelayMs === null ? 'settled' : 'scheduled';
  };
}
