import type { Job } from 'bullmq';
import { Worker } from 'bullmq';
import { pollIntent } from '../src/payments/pollIntent.ts';
import { rateLimitWaitMs } from '../src/svc/errors.ts';
import type { JobContext } from './jobContext.ts';
import { pollJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/**
 * polls-<store> queues: one poll, then the next one on the adaptive schedule. A 40001 pauses the
 * whole queue of that API key for retry_after (every process shares the pause; the client sets it,
 * jobs/keyPause.ts) and puts the job back; an error no retry can fix fails the job at once.
 *
 * The job carries its poll number n (job id poll.<intent>.<n>), so a retried poll counts once and
 * schedules the same next job as every other poll of the intent (src/payments/pollIntent.ts).
 */
export function pollProcessor(ctx: JobContext) {
  return async (job: Job): Promise<string> => {
    const { intentId, storeId } = pollJob.data.parse(job.data);
    const n = pollNumberOf(job, intentId);
    let outcome: Awaited<ReturnType<typeof pollIntent>>;
    try {
      outcome = await pollIntent(ctx.domain, intentId, {
        n,
        scale: ctx.pollScale,
        ...(ctx.random ? { random: ctx.random } : {}),
      });
    } catch (err) {
      if (rateLimitWaitMs(err) !== undefined) {
        // The client has paused the key (this queue's rate limit) for as long as the service asked.
        ctx.metrics.polls.inc({ outcome: 'rate_limited' });
        throw Worker.RateLimitError();
      }
      ctx.metrics.polls.inc({ outcome: 'error' });
      // One no retry can fix fails the job at once (withRetryability).
      throw err;
    }
    ctx.metrics.polls.inc({ outcome: outcome.changed ? 'changed' : 'unchanged' });
    if (outcome.nextDelayMs !== null) {
      await schedulePoll(ctx, storeId, intentId, outcome.nextDelayMs, outcome.nextPoll);
    }
    return outcome.nextDelayMs === null ? 'settled' : 'scheduled';
  };
}

/**
 * The job's poll number: `n` of its data, else (a job queued before n was carried) the <n> of its
 * id poll.<intent>.<n>; undefined for a job without either (pollIntent then takes the count).
 */
export function pollNumberOf(job: Pick<Job, 'data' | 'id'>, intentId: string): number | undefined {
  const fromData = pollJob.data.safeParse(job.data);
  if (fromData.success && fromData.data.n !== undefined) return fromData.data.n;
  const digits = /\.(\d+)$/.exec(job.id ?? '')?.[1];
  const n = digits === undefined ? undefined : Number(digits);
  return n !== undefined && job.id === pollJob.jobId(intentId, n) ? n : undefined;
}
