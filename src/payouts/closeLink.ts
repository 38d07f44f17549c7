import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { IdempotencyConflictError } from '../ledger/errors.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { claimLinkCancelled } from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
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
  deps: Pick<DomainContext, 'chains' | 'accounts' | 'clock'> & Partial<Pick<DomainContext, 'stores'>>,
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
  if (newlyCancelled && source !== 'chain')
    await sayIfRacing(tx, deps, payout, linkFactOf(deps, payout).token.decimals);
  await tx.execute(sql`
    update payouts set link_status = 'cancelled', cancelled_at = ${cancelledAt.toISOString()}::timestamptz,
           updated_at = greatest(updated_at, now())
    where id = ${payoutId}`);
  const updated = await findPayout(tx, { id: payoutId });
  if (!updated) throw new Error(`payout ${payoutId} vanished`);
  return { payout: viewOf(updated), newlyCancelled };
}

/** Finding kind: a cancel booked while the link's pool had sent money not booked yet. */
export const CANCEL_RACES = 'cancel_races_pool_outflow';

/**
 * The guard the expiry job has (expireClaimLinks), for a cancel: the service answered success, so
 * rule 7 is booked, but when the pool has sent money the chain side stored and has not booked
 * (pending, or final and not matched), other than back to custody (the refund the cancel
 * starts), that may be the claim the cancel raced. Say so: the claim, once final, is booked out of
 * the receivable (`claimed_after_cancel`) and this finding resolves with it or with the refund.
 */
async function sayIfRacing(
  tx: DbExecutor,
  deps: Partial<Pick<DomainContext, 'stores'>>,
  payout: PayoutView,
  decimals: number,
): Promise<void> {
  if (!payout.poolAddress || !payout.claimLinkId) return;
  const custody = deps.stores
    ?.find((s) => s.storeId === payout.storeId)
    ?.wallets.get(payout.chainId)
    ?.custody.toLowerCase();
  const { rows } = await tx.execute<{ tx_hash: string; value: string; state: string }>(sql`
    select tx_hash, value::text, state from chain_transfers
    where chain_id = ${payout.chainId} and from_address = ${payout.poolAddress.toLowerCase()} and value > 0
      and (state = 'pending' or (state = 'final' and applied_at is null))
      ${custody ? sql`and to_address <> ${custody}` : sql``}
    order by block_number, log_index limit 1`);
  const outflow = rows[0];
  if (!outflow) return;
  await recordFinding(
    tx,
    {
      kind: CANCEL_RACES,
      severity: 'warning',
      ref: { type: 'claim_link', id: payout.claimLinkId },
      details: {
        payout_id: payout.id,
        what: 'the service accepted the cancel, but the pool has sent money our books have not booked yet: it may be the claim',
        tx_hash: outflow.tx_hash,
        value: formatDecimalAmount(BigInt(outflow.value), decimals),
        state: outflow.state,
      },
    },
    payout.storeId,
  );
}
