import { type Job, UnrecoverableError } from 'bullmq';
import { expireClaimLinks } from '../src/payouts/expireClaimLinks.ts';
import { refundsOverdue } from '../src/payouts/refundsOverdue.ts';
import type { JobContext } from './jobContext.ts';
import { claimLinkJobs } from './queues.ts';

/**
 * claim-links queue: the 14-day expiry (rule 7, `claim_link.expired`) and the overdue-refund
 * check. Both read the payments clock (the sandbox's when the daemon follows it) and are safe to
 * run twice or in two processes at once.
 */
export function claimLinkProcessor(ctx: JobContext, options: { refundGraceMs: number }) {
  const deps = { ...ctx.domain, refundGraceMs: options.refundGraceMs };
  return async (job: Job): Promise<unknown> => {
    switch (job.name) {
      case claimLinkJobs.expire.name:
        claimLinkJobs.expire.data.parse(job.data);
        return expireClaimLinks(deps, deps.clock.now());
      case claimLinkJobs.refundsOverdue.name:
        claimLinkJobs.refundsOverdue.data.parse(job.data);
        return refundsOverdue(deps, deps.clock.now());
      default:
        throw new UnrecoverableError(`unknown claim-links job ${job.name}`);
    }
  };
}
