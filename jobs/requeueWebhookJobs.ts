import type { Job, Queue } from 'bullmq';
import { StablebooksError } from '../src/errors/stablebooksError.ts';
import { addWebhookJobs } from './addWebhookJobs.ts';
import { webhookJob } from './queues.ts';

/**
 * What became of a replayed webhook's job: `added` (it had none), `replaced` (its finished job was
 * removed and a new one added), `queued` (a waiting job will run it), `promoted` (a job waiting
 * out a backoff runs now).
 */
export type RequeueOutcome = 'added' | 'replaced' | 'queued' | 'promoted';

/** A job still running after this long is a stuck worker, not one about to finish. */
const ACTIVE_WAIT_MS = 15_000;
const ACTIVE_POLL_MS = 200;

/**
 * Makes sure each webhook (its inbox row already back to `received`) has a job that will run.
 * BullMQ keeps finished jobs under their id (removeOnComplete, removeOnFail) and silently ignores
 * an add under an id it still holds, so a finished job is removed first, as the inbox sweeper
 * does for rows still `received`. A webhook that ended `failed` in the inbox has a *completed* job
 * (its processor returned normally), and the sweeper never looks at failed rows: the replay puts
 * the row back and replaces the job at once.
 * A running job is waited for: it may have read the row before the reset and then finish without
 * processing it, so it is replaced once it has finished.
 */
export async function requeueWebhookJobs(
  queue: Queue,
  webhookIds: string[],
  options: { activeWaitMs?: number } = {},
): Promise<Map<string, RequeueOutcome>> {
  const outcomes = new Map<string, RequeueOutcome>();
  const toAdd: string[] = [];
  for (const webhookId of webhookIds) {
    const outcome = await clearFinishedJob(queue, webhookId, options.activeWaitMs ?? ACTIVE_WAIT_MS);
    outcomes.set(webhookId, outcome);
    if (outcome === 'added' || outcome === 'replaced') toAdd.push(webhookId);
  }
  await addWebhookJobs(queue, toAdd);
  return outcomes;
}

/** Thrown when a webhook's job kept running: the replay should be run again later. */
export class WebhookJobBusyError extends StablebooksError {
  override name = 'WebhookJobBusyError';
  readonly retryable = true;
  constructor(readonly webhookId: string) {
    super(`webhook ${webhookId}: its job is still running; run the same replay again in a minute`);
  }
}

async function clearFinishedJob(
  queue: Queue,
  webhookId: string,
  activeWaitMs: number,
): Promise<RequeueOutcome> {
  const deadline = Date.now() + activeWaitMs;
  for (;;) {
    const job: Job | undefined = await queue.getJob(webhookJob.jobId(webhookId));
    if (!job) return 'added';
    const state = await job.getState();
    switch (state) {
      case 'unknown':
        return 'added';
      case 'completed':
      case 'failed':
        try {
          await job.remove();
          return 'replaced';
        } catch {
          // A worker took it between the two reads (a retry of a failed job): look again.
          break;
        }
      case 'delayed':
        try {
          await job.promote();
          return 'promoted';
        } catch {
          // Its delay ended between the two reads: look again.
          break;
        }
      case 'active':
        break;
      default:
        return 'queued';
    }
    if (Date.now() > deadline) throw new WebhookJobBusyError(webhookId);
    await new Promise((resolve) => setTimeout(resolve, ACTIVE_POLL_MS));
  }
}
