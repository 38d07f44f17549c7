import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { payoutSettledId, recordEvent, tokenData } from '../events/recordEvent.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { IdempotencyConflictError } from '../ledger/errors.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { CLAIM_LINK_EXPIRY_MS, claimLinkExpired } from '../ledger/rules/claimLinkRules.ts';
import { findPayout, linkFactOf } from './payoutRecord.ts';

/**
 * The 14-day expiry (spec: a funded, unclaimed link expires 14 days after funding; the refund goes
 * back through reconciliation, with no webhook). Links funded at least 14 days before `now`, not
 * claimed (or being claimed), cancelled or expired in our books, become expired: expired_at = the
 * moment of expiry, link_status expired, and rule 7 (`claim_link.expired`) dated at that moment.
 * Each link in its own transaction, under its row lock, so a run that fails half-way keeps what it
 * did and two runs at once expire each link once. Returns how many links this run expired.
 *
 * The clock alone cannot tell that nobody claimed the link in time: a claim mined before the
 * expiry may not be final yet. A link whose pool has sent money the chain side has stored but not
 * booked (pending, or final and not yet matched) waits for the matcher, which books the claim (or
 * the refund, closing the link itself). A claim the indexer has not even stored yet is still
 * possible; the matcher then books it out of the receivable this expiry created
 * (src/settlement/claimLinkClaim.ts, `claimed_after_expiry`).
 */
export async function expireClaimLinks(
  deps: Pick<DomainContext, 'db' | 'chains' | 'accounts' | 'logger'>,
  now: Date,
): Promise<number> {
  const due = await deps.db.execute<{ id: string }>(sql`
    select id from payouts
    where create_outcome = 'created' and funded_at is not null
      and funded_at <= ${new Date(now.getTime() - CLAIM_LINK_EXPIRY_MS).toISOString()}::timestamptz
      and claimed_at is null and cancelled_at is null and expired_at is null
      and coalesce(link_status, '') not in ('claiming', 'claimed', 'cancelled')
      and (pool_address is null or not exists (
        select 1 from chain_transfers t
        where t.chain_id = payouts.chain_id and t.from_address = lower(payouts.pool_address)
          and (t.state = 'pending' or (t.state = 'final' and t.applied_at is null))))
    order by funded_at`);
  let expired = 0;
  for (const { id } of due.rows) {
    const done = await deps.db.transaction((tx) => markExpired(tx, deps, id, now));
    if (done) {
      expired += 1;
      deps.logger.info({ payoutId: id }, 'claim link expired (14 days after funding)');
    }
  }
  return expired;
}

/**
 * Rule 7 (`claim_link.expired`) for one link whose 14 days have passed, inside the caller's
 * transaction and under the payout's row lock: false when the link is not due or already closed
 * (claimed, being claimed, cancelled, expired). The expiry job and the chain matcher (a refund
 * that arrives before the job ran) both close links through here.
 */
export async function markExpired(
  tx: DbExecutor,
  deps: Pick<DomainContext, 'chains' | 'accounts'>,
  id: string,
  now: Date,
): Promise<boolean> {
  const payout = await findPayout(tx, { id }, { forUpdate: true });
  if (
    !payout?.fundedAt ||
    payout.claimedAt ||
    payout.cancelledAt ||
    payout.expiredAt ||
    ['claiming', 'claimed', 'cancelled'].includes(payout.linkStatus ?? '')
  )
    return false;
  const outcome = claimLinkExpired({ ...linkFactOf(deps, payout), fundedAt: payout.fundedAt, now });
  if (!outcome.entry) return false;
  await tx.execute(sql`
      update payouts set expired_at = ${outcome.entry.occurredAt.toISOString()}::timestamptz,
             link_status = 'expired', updated_at = greatest(updated_at, now())
      where id = ${id}`);
  try {
    const posted = await postEntry(tx, outcome.entry, { accounts: deps.accounts });
    const fact = linkFactOf(deps, payout);
    await recordEvent(tx, {
      id: payoutSettledId(id, 'expired'),
      type: 'payout.settled',
      occurredAt: outcome.entry.occurredAt,
      data: {
        payout_id: id,
        claim_link_id: fact.claimLinkId,
        store_id: fact.storeId,
        outcome: 'expired',
        ...tokenData(fact.token),
        amount: fact.amount,
        entry_id: posted.id.toString(),
      },
    });
  } catch (err) {
    if (!(err instanceof IdempotencyConflictError)) throw err;
    await recordFinding(
      tx,
      {
        kind: 'claim_link_close_conflict',
        severity: 'warning',
        ref: { type: 'claim_link', id: payout.claimLinkId ?? id },
        details: { payout_id: id, what: 'expiry found the link already closed otherwise' },
      },
      payout.storeId,
    );
  }
  return true;
}
