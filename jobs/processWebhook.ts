import { type Job, UnrecoverableError } from 'bullmq';
import { processInboxWebhook } from '../src/payments/processInboxWebhook.ts';
import { SvcError } from '../src/svc/errors.ts';
import type { JobContext } from './jobContext.ts';
import { webhookJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/** webhooks queue: apply one stored webhook; an intent first seen here and not settled starts being polled. */
export function webhookProcessor(ctx: JobContext) {
  return async (job: Job): Promise<string> => {
    const { webhookId } = webhookJob.data.parse(job.data);
    let outcome: Awaited<ReturnType<typeof processInboxWebhook>>;
    try {
      outcome = await processInboxWebhook(ctx.payments, webhookId);
    } catch (err) {
      // No retry fixes a refused request; the inbox row stays `received` for a person (and the
      // sweeper tries again later, in case the cause was fixed).
      if (err instanceof SvcError && !err.retryable) throw new UnrecoverableError(err.message);
      throw err;
    }
    if (outcome.kind === 'applied' && !outcome.terminal) {
      await schedulePoll(ctx, outcome.storeId, outcome.intentId, 0);
    }
    return outcome.kind;
  };
}
