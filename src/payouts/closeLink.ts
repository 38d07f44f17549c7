import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { IdempotencyConflictError } from '../ledger/errors.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { claimLinkCancelled } from '../ledger/rules/claimLinkRules.ts';
import { findPayout, linkFactOf, type PayoutView, viewOf } from './payoutRecord.ts';

export interface CloseResult {
  payout: PayoutView;
  /** True when this call marked the link cancelled in our books (rule 7 posted now). */
  newlyCancelled: boolean;
}

/**
 * Marks a created payout's link cancelled and posts rule 7 (`claim_link.cancelled`), inside the
 * caller's transaction, at most once: a link already cancelled in our books keeps its first
 * cancelled_at, so a repeat posts the same entry (an idempotent replay). A link our books already
 * closed by expiry (or saw claimed) gets a `claim_link_close_conflict` finding instead of a second
 * close (cancel and expiry share the key `claim_link:closed:<id>`), and keeps its status and
 * timestamps: marking it cancelled too would make refundsOverdue wait for a refund that a claimed
 * link never gets (or name an expiry refund a cancel's) and the report count it twice.
 */
export async function markCancelled(
  tx: DbExecutor,
  deps: Pick<DomainContext, 'chains' | 'accounts' | 'clock'>,
  payoutId: string,
  source: 'api' | 'webhook' | 'chain' | 'create',
): Promise<CloseResult> {
  const payout = await findPayout(tx, { id: payoutId }, { forUpdate: true });
  if (!payout?.claimLinkId) throw new Error(`payout ${payoutId} has no claim link to cancel`);
  const claimLinkId = payout.claimLinkId;
  const conflict = async (what: string): Promise<CloseResult> => {
    await recordFinding(
      tx,
      {
        kind: 'claim_link_close_conflict',
        severity: 'warning',
        ref: { type: 'claim_link', id: claimLinkId },
        details: { payout_id: payout.id, what },
      },
      payout.storeId,
    );
    return { payout: viewOf(payout), newlyCancelled: false };
  };
  const closedOtherwise =
    payout.expiredAt !== null
      ? `our books expired it at ${payout.expiredAt.toISOString()}`
      : payout.claimedAt !== null
        ? `our books saw it claimed at ${payout.claimedAt.toISOString()}`
        : null;
  if (closedOtherwise) {
    return conflict(`the service reports the link cancelled (${source}) but ${closedOtherwise}`);
  }
  const newlyCancelled = payout.cancelledAt === null;
  const cancelledAt = payout.cancelledAt ?? deps.clock.now();
  const outcome = claimLinkCancelled({ ...linkFactOf(deps, payout), occurredAt: cancelledAt });
  try {
    if (outcome.entry) await postEntry(tx, outcome.entry, { accounts: deps.accounts });
  } catch (err) {
    // The insert did nothing (ON CONFLICT) and the transaction is intact: only tell a person.
    if (!(err instanceof IdempotencyConflictError)) throw err;
    return conflict(`cancel (${source}) found the link already closed otherwise`);
  }
  await tx.execute(sql`
    update payouts set link_status = 'cancelled', cancelled_at = ${cancelledAt.toISOString()}::timestamptz,
           updated_at = greatest(updated_at, now())
    where id = ${payoutId}`);
  const updated = await findPayout(tx, { id: payoutId });
  if (!updated) throw new Error(`payout ${payoutId} vanished`);
  return { payout: viewOf(updated), newlyCancelled };
}
