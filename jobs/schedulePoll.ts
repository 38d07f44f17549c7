import { loadTrackedIntent } from '../src/payments/intentTracking.ts';
import type { JobContext } from './jobContext.ts';
import { pollJob } from './queues.ts';

/**
 * Adds poll number `n` of an intent (job id poll.<intent>.<n>, n in the data too), by default the
 * next one by the intent's poll count. However many processes schedule "the next poll" at once,
 * one job exists; a poll passes the number it computed (src/payments/pollIntent.ts).
 */
export async function schedulePoll(
  ctx: JobContext,
  storeId: string,
  intentId: string,
  delayMs: number,
  n?: number,
): Promise<void> {
  const tracked = await loadTrackedIntent(ctx.payments.db, intentId);
  if (!tracked || tracked.settledBy) return;
  const next = n ?? tracked.pollCount;
  await ctx.queues
    .polls(storeId)
    .add(
      pollJob.name,
      { intentId, storeId, n: next },
      { ...pollJob.options, jobId: pollJob.jobId(intentId, next), delay: delayMs },
    );
}
