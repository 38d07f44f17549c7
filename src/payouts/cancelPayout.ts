import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import { SvcApiError } from '../svc/errors.ts';
import { notCancellableDetailsSchema } from '../svc/models/errorDetails.ts';
import { type CloseResult, markCancelled } from './closeLink.ts';
import { PayoutNotFoundError, PayoutStateError } from './errors.ts';
import { findPayout } from './payoutRecord.ts';

export interface CancelPayoutResult extends CloseResult {
  /** The service answered 50108 "cancelled": the link had been cancelled before this call. */
  alreadyCancelled: boolean;
}

/** Statuses that 50108 reports and that we keep in link_status (the link will not change again). */
const KEPT_STATUSES = new Set(['claimed', 'expired']);

/**
 * Cancels a funded link at the service (by payout id or claim-link id). Success, or 50108 with
 * details.status "cancelled" (cancel is not retry-idempotent: a repeat says so), marks it
 * cancelled and posts rule 7 in one transaction, once. Any other 50108 is an error naming the
 * link's status, with nothing posted; claimed or expired is remembered in link_status.
 *
 * "claimed" is the service's word, not the chain's: it is recorded as claimed_reported_at (first
 * report kept) and claimed_at stays for the chain side, which books rule 6 when the claim's
 * transfer out of the pool is final. Until then the amount stays in assets:claim_pool, and
 * reconciliation reports claim_unproven, dated from the report, after RECON_IN_TRANSIT_MINUTES.
 */
export async function cancelPayout(
  deps: DomainContext,
  idOrClaimLinkId: string,
): Promise<CancelPayoutResult> {
  const payout = await findPayout(deps.db, { idOrClaimLinkId });
  if (!payout) throw new PayoutNotFoundError(idOrClaimLinkId);
  if (payout.createOutcome !== 'created' || !payout.claimLinkId) {
    throw new PayoutStateError(
      `payout ${payout.id} has no funded claim link (create outcome ${payout.createOutcome}); ` +
        (payout.createOutcome === 'failed'
          ? 'nothing was paid, so there is nothing to cancel'
          : `run the same create again (reference_id ${payout.referenceId}) to learn its outcome first`),
      payout.linkStatus,
    );
  }
  const claimLinkId = payout.claimLinkId;
  let alreadyCancelled: boolean;
  try {
    const outcome = await deps.client(payout.storeId).cancelClaimLinkAutoPayout(claimLinkId);
    alreadyCancelled = outcome.already_cancelled;
  } catch (err) {
    if (err instanceof SvcApiError && err.code === 50108) {
      const status = notCancellableDetailsSchema.safeParse(err.details).data?.status ?? null;
      if (status && KEPT_STATUSES.has(status)) {
        const reportedAt = status === 'claimed' ? deps.clock.now().toISOString() : null;
        await deps.db.execute(sql`
          update payouts set link_status = ${status},
                 claimed_reported_at = coalesce(claimed_reported_at, ${reportedAt}::timestamptz),
                 updated_at = greatest(updated_at, now())
          where id = ${payout.id}`);
      }
      throw new PayoutStateError(
        `claim link ${claimLinkId} (payout ${payout.id}) cannot be cancelled: the service says it is ${status ?? 'in an unknown state'}` +
          (status === 'claimed' || status === 'claiming'
            ? '; its recipient has claimed it'
            : status === 'pending_deposit'
              ? '; its funding is not confirmed yet, try again in a moment'
              : status === 'expired'
                ? '; it expired and its funds are refunded to the custody wallet'
                : ''),
        status,
      );
    }
    if (err instanceof SvcApiError && err.code === 50107) {
      throw new PayoutStateError(
        `claim link ${claimLinkId} (payout ${payout.id}) is unknown to the service for store ${payout.storeId} (50107)`,
        null,
      );
    }
    throw err;
  }
  const closed = await deps.db.transaction((tx) => markCancelled(tx, deps, payout.id, 'api'));
  deps.logger.info(
    { payoutId: payout.id, claimLinkId, alreadyCancelled, newlyCancelled: closed.newlyCancelled },
    'claim link cancelled',
  );
  return { ...closed, alreadyCancelled };
}
