import type { Job } from 'bullmq';
import { processInboxWebhook } from '../src/payments/processInboxWebhook.ts';
import type { JobContext } from './jobContext.ts';
import { webhookJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/** webhooks queue: apply one stored webhook; an intent first seen here and not settled starts being polled. */
export function webhookProcessor(ctx: JobContext) {
  return async (job: Job): Promise<string> => {
    const { webhookId } = webhookJob.data.parse(job.data);
    const outcome = await processInboxWebhook(ctx.payments, webhookId);
    if (outcome.kind === 'applied' && !outcome.terminal) {
      await schedulePoll(ctx, outcome.storeId, outcome.intentId, 0);
    }
    return outcome.kind;
  };
}
