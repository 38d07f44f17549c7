import { type Job, UnrecoverableError } from 'bullmq';
import { systemClock } from '../src/clock.ts';
import { previousUtcDay } from '../src/recon/period.ts';
import { type ReconDeps, runReconciliation } from '../src/recon/runReconciliation.ts';
import { reconJobs } from './queues.ts';

/**
 * recon queue: one reconciliation run. The scheduled run (no period in its data) covers the UTC
 * day before now. A run that breaks is retried (attempts in the catalog); one asked for an unknown
 * store cannot succeed and is not retried.
 */
export function reconProcessor(deps: ReconDeps) {
  return async (job: Job): Promise<unknown> => {
    if (job.name !== reconJobs.run.name) throw new UnrecoverableError(`unknown recon job ${job.name}`);
    const data = reconJobs.run.data.parse(job.data);
    const period =
      data.from && data.to
        ? { from: new Date(data.from), to: new Date(data.to) }
        : previousUtcDay((deps.clock ?? systemClock).now());
    // A run asked for an unknown store (ReconInputError) is not retried (withRetryability).
    const result = await runReconciliation(deps, {
      period,
      storeId: data.storeId ?? null,
      trigger: 'schedule',
    });
    return { runId: result.runId, passed: result.passed, dir: result.dir };
  };
}
