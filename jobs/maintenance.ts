import type { Job, Queue } from 'bullmq';
import { pruneEvents } from '../src/events/deliverEvents.ts';
import { pruneWebhookNonces, waitingInboxRows } from '../src/intake/inboxMaintenance.ts';
import { checkpointBalances } from '../src/ledger/balances.ts';
import { sealLedger } from '../src/ledger/sealLedger.ts';
import { staleTrackedIntents } from '../src/payments/intentTracking.ts';
import { resolveSettledPollRefusals } from '../src/payments/pollIntent.ts';
import { addWebhookJobs } from './addWebhookJobs.ts';
import type { JobContext } from './jobContext.ts';
import { maintenanceJobs, pollJob, webhookJob } from './queues.ts';
import { schedulePoll } from './schedulePoll.ts';

/** A stored webhook with no job after this long gets one (job ids dedupe against a live job). */
const INBOX_GRACE_MS = 20_000;
/** How long outbound events stay in the outbox once delivered or given up (README, "Outbound events"). */
const EVENTS_RETENTION_MS = 7 * 24 * 60 * 60_000;
/** Longer than the slowest poll interval (10 min): a tracked intent not polled for this long has lost its chain. */
const POLL_STALE_MS = 15 * 60_000;

/** maintenance queue: the sweepers that make lost jobs impossible to lose for good. */
export function maintenanceProcessor(ctx: JobContext) {
  return async (job: Job): Promise<number> => {
    switch (job.name) {
      case maintenanceJobs.sweepInbox.name: {
        const ids = await waitingInboxRows(ctx.domain.db, INBOX_GRACE_MS * Math.min(1, ctx.pollScale * 10));
        if (ids.length > 0) {
          for (const id of ids) await dropFinishedJob(ctx.queues.webhooks, webhookJob.jobId(id));
          await addWebhookJobs(ctx.queues.webhooks, ids);
        }
        return ids.length;
      }
      case maintenanceJobs.sweepPolls.name: {
        const stale = await staleTrackedIntents(
          ctx.domain.db,
          POLL_STALE_MS * ctx.pollScale,
          ctx.domain.clock.now(),
        );
        for (const s of stale) {
          // The number read here, not re-read: the job dropped and the job added are the same one.
          await dropFinishedJob(ctx.queues.polls(s.storeId), pollJob.jobId(s.id, s.pollCount));
          await schedulePoll(ctx, s.storeId, s.id, 0, s.pollCount);
        }
        // A refused intent settled by a webhook or the chain is polled no more: its finding goes.
        await resolveSettledPollRefusals(ctx.domain.db);
        return stale.length;
      }
      case maintenanceJobs.checkpointBalances.name:
        return (await checkpointBalances(ctx.domain.db)).accounts;
      case maintenanceJobs.sealLedger.name: {
        const run = await sealLedger(ctx.domain.db);
        if (run.sealed > 0 && run.head)
          ctx.logger.debug(
            { sealed: run.sealed, seq: run.head.seq.toString(), unsealed: run.unsealed },
            'ledger sealed',
          );
        return run.sealed;
      }
      case maintenanceJobs.pruneNonces.name:
        return pruneWebhookNonces(ctx.domain.db);
      case maintenanceJobs.pruneEvents.name:
        return pruneEvents(ctx.domain.db, {
          retentionMs: EVENTS_RETENTION_MS,
          deliveryOn: ctx.eventsDeliveryOn ?? false,
        });
      default:
        throw new Error(`unknown maintenance job ${job.name}`);
    }
  };
}

/**
 * A finished job stays in the queue under its id (removeOnComplete, removeOnFail), and BullMQ
 * ignores an add with an id it still holds: the sweepers remove such a job first, so the work
 * starts again. A completed one counts too: the work it stands for is found undone (an inbox row
 * a replay put back to received, a poll chain that did not go on), so it did not do it.
 */
async function dropFinishedJob(queue: Queue, jobId: string): Promise<void> {
  const job = await queue.getJob(jobId);
  if (!job) return;
  const state = await job.getState();
  if (state === 'failed' || state === 'completed') await job.remove();
}
