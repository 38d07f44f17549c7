import type { Queue } from 'bullmq';
import { webhookJob } from './queues.ts';

/**
 * Adds the job of each stored webhook: the one place a webhook's job is made (the intake after
 * storing, the inbox sweeper, `webhooks replay`). The job id is the webhook's, so BullMQ ignores
 * an add while a job of that webhook is still held; callers that need a new run remove the
 * finished job first.
 */
export async function addWebhookJobs(queue: Queue, webhookIds: readonly string[]): Promise<void> {
  if (webhookIds.length === 0) return;
  await queue.addBulk(
    webhookIds.map((webhookId) => ({
      name: webhookJob.name,
      data: { webhookId },
      opts: { ...webhookJob.options, jobId: webhookJob.jobId(webhookId) },
    })),
  );
}
