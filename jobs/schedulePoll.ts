import { loadTrackedIntent } from '../src/payments/intentTracking.ts';
import type { JobContext } from './jobContext.ts';
import { pollJob } from './queues.ts';

/**
 * Adds the next poll of an intent. The job id carries the intent's poll count, so however many
 * processes schedule "the next poll" at once, one job exists.
 */
export async function schedulePoll(
  ctx: JobContext,
  storeId: string,
  intentId: string,
  delayMs: number,
): Promise<void> {
  const tracked = await loadTrackedIntent(ctx.payments.db, intentId);
  if (!tracked || tracked.settledBy) return;
  await ctx.queues
    .polls(storeId)
    .add(
      pollJob.name,
      { intentId, storeId },
      { ...pollJob.options, jobId: pollJob.jobId(intentId, tracked.pollCount), delay: delayMs },
    );
}
