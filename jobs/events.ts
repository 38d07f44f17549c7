import { type Job, UnrecoverableError } from 'bullmq';
import { type DeliveryDeps, deliverEvents } from '../src/events/deliverEvents.ts';
import { eventJobs } from './queues.ts';

/**
 * events queue: one delivery run of the outbox (src/events/deliverEvents.ts). Without
 * EVENTS_WEBHOOK_URL (`deps` undefined) there is nothing to deliver to: the job does nothing (a
 * scheduler left in Redis by an earlier configuration is removed by the scheduler role).
 */
export function eventsProcessor(deps: DeliveryDeps | undefined) {
  return async (job: Job): Promise<unknown> => {
    switch (job.name) {
      case eventJobs.deliver.name:
        eventJobs.deliver.data.parse(job.data);
        return deps ? deliverEvents(deps) : { skipped: 'EVENTS_WEBHOOK_URL is not set' };
      default:
        throw new UnrecoverableError(`unknown events job ${job.name}`);
    }
  };
}
