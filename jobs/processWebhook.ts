import { DelayedError, type Job } from 'bullmq';
import { createMicroBatcher } from '../src/batching/microBatcher.ts';
import type { InboxOutcome } from '../src/inbox/inboxOutcome.ts';
import { startInboxBatch } from '../src/inbox/processInboxBatch.ts';
import { failRefusedWebhook, IntentReadRefusedError } from '../src/inbox/webhookFailures.ts';
import { rateLimitWaitMs } from '../src/svc/errors.ts';
import type { JobContext } from './jobContext.ts';
import { webhookJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/**
 * webhooks queue: apply one stored webhook; an intent first seen here and not settled starts being
 * polled. The jobs a worker runs at once are applied together (processInboxBatch: one transaction
 * for many payments), each job still succeeding or failing on its own webhook.
 */
export function webhookProcessor(ctx: JobContext) {
  const batches = createMicroBatcher<string, InboxOutcome>({
    // Resolves once the batch's transaction is done; a webhook whose intent read hangs is applied
    // when it answers, and holds only its own job, not the batch's slot.
    run: (webhookIds) => startInboxBatch(ctx.domain, webhookIds),
    maxBatch: 64,
    // Two batches overlap: one fetching its intents from the API while the other writes.
    maxInFlight: 2,
  });
  return async (job: Job, token?: string): Promise<string> => {
    const { webhookId } = webhookJob.data.parse(job.data);
    let outcome: InboxOutcome;
    try {
      outcome = await batches.add(webhookId);
    } catch (err) {
      // The store's API key is paused (a 40001, here or in another process): wait it out without
      // spending an attempt, so a long rate limit cannot fail the webhook.
      const waitMs = rateLimitWaitMs(err);
      if (waitMs !== undefined && token) {
        await job.moveToDelayed(Date.now() + waitMs, token);
        throw new DelayedError();
      }
      // The service refused the intent (a 30001 from an IP allowlist slip, a 50001): it is tracked
      // already, so the poll sweeper books the payment whatever happens here. BullMQ's backoff
      // retries the webhook; its last attempt (the job's, or fewer for a 50001) fails the row
      // with a finding, so the inbox sweeper does not add it again for ever.
      if (err instanceof IntentReadRefusedError) {
        const attempts = Math.min(job.opts.attempts ?? 1, err.attempts);
        if (job.attemptsMade + 1 >= attempts) {
          return (await failRefusedWebhook(ctx.domain, err, job.attemptsMade + 1)).kind;
        }
        throw err;
      }
      // An error no retry fixes (a refused request: a checkout webhook's is failed with a finding
      // before it gets here) fails the job at once (withRetryability); the inbox row stays
      // `received` for a person, and the sweeper tries again later in case the cause was fixed.
      throw err;
    }
    if (outcome.kind === 'applied' && !outcome.settled) {
      await schedulePoll(ctx, outcome.storeId, outcome.intentId, 0);
    }
    return outcome.kind;
  };
}
