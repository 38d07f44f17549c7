import { loadTrackedIntent } from '../src/payments/intentTracking.ts';
import type { JobContext } from './jobContext.ts';
import { pollJob } from './queues.ts';

/**
 * Adds poll number `n` of an intent (job id poll.<intent>.<n>, n in the data too), by default the
 * next one by the intent's poll count. However many processes schedule "the next poll" at once,
 * one job exists; a poll passes the number it computed (src/payments/pollIntent.ts). A delay of 0
 * also brings that job forward when it was already waiting on a longer delay.
 */
export async function schedulePoll(
  ctx: JobContext,
  storeId: string,
  intentId: string,
  delayMs: number,
  n?: number,
): Promise<void> {
  const tracked = await loadTrackedIntent(ctx.domain.db, intentId);
  if (!tracked || tracked.settledBy) return;
  const next = n ?? tracked.pollCount;
  const queue = ctx.queues.polls(storeId);
  const jobId = pollJob.jobId(intentId, next);
  await queue.add(
    pollJob.name,
    { intentId, storeId, n: next },
    { ...pollJob.options, jobId, delay: delayMs },
  );
  // "Poll now" (a webhook the API read did not settle) finds this poll already queued on the slow
  // schedule: BullMQ kept that job as it was, minutes away. Run it now instead.
  if (delayMs === 0) {
    const job = await queue.getJob(jobId);
    if (job && (await job.isDelayed())) {
      // Moved on meanwhile (a worker took it, or it fell due): nothing left to bring forward.
      await job.promote().catch(async (err: unknown) => {
        if (await job.isDelayed()) throw err;
      });
    }
  }
}
