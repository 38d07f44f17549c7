import { type Job, UnrecoverableError } from 'bullmq';
import { type AlertDeps, evaluateAlerts } from '../src/alerts/evaluateAlerts.ts';
import { alertJobs } from './queues.ts';

/**
 * alerts queue: one evaluation run (conditions -> alert_states -> owed messages). Safe to run twice
 * or in two processes at once; a notifier that is down never fails the job (its message stays owed).
 */
export function alertProcessor(deps: AlertDeps) {
  return async (job: Job): Promise<unknown> => {
    switch (job.name) {
      case alertJobs.evaluate.name:
        alertJobs.evaluate.data.parse(job.data);
        return evaluateAlerts(deps);
      default:
        throw new UnrecoverableError(`unknown alerts job ${job.name}`);
    }
  };
}
