import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/**
 * What the chain side of a claim link (src/settlement) changes in its payout row: the funding it
 * saw, the claim, the refund, and the undoing of the last two when a reorg orphans them. The
 * payouts table is written only through functions of src/payouts; these run in the settlement's
 * transaction, beside the entry they go with. updated_at never moves back: createPayout dates a
 * row's attempts by the injected clock, which funding matched by amount compares with block times,
 * and a later write by the database's clock must not pull that date back.
 */

/**
 * The funding of a link is booked: its pool and funding transaction, kept when already known.
 * A payout whose create answer carried no funding hash was dated by a replay, maybe days after
 * the lost answer: its funding's block dates it instead, or the 14-day expiry (and the reading of
 * its refund) would come that much later. An answer with the hash came back with the funding and
 * dates it well; and the sandbox's chain does not follow its clock.
 */
export async function recordFunding(
  tx: DbExecutor,
  payoutId: string,
  funding: { poolAddress: string; txHash: string; blockTime: Date },
): Promise<void> {
  await tx.execute(sql`
    update payouts set pool_address = coalesce(pool_address, ${funding.poolAddress}),
      funding_tx_hash = coalesce(funding_tx_hash, ${funding.txHash}),
      funded_at = case when funding_tx_hash is null
                       then least(funded_at, ${funding.blockTime.toISOString()}::timestamptz)
                       else funded_at end,
      updated_at = greatest(updated_at, now())
    where id = ${payoutId}`);
}

/**
 * The link was claimed. The claim replaces an expiry our books made first: expired_at goes, so
 * the link is reported claimed, not both (the expiry's finding keeps when it was).
 */
export async function markClaimed(tx: DbExecutor, payoutId: string, claimedAt: Date): Promise<void> {
  await tx.execute(sql`
    update payouts set claimed_at = ${claimedAt.toISOString()}::timestamptz, link_status = 'claimed',
      expired_at = null, updated_at = greatest(updated_at, now())
    where id = ${payoutId}`);
}

/**
 * The claim's transfer was orphaned by a reorg: the link is open again (cancelled, when the service
 * had accepted our cancel before the claim: its receivable is owed again). Returns the payout whose
 * claim this took back (null when it was not claimed: nothing was announced).
 */
export async function unmarkClaimed(tx: DbExecutor, claimLinkId: string): Promise<string | null> {
  const { rows } = await tx.execute<{ id: string; was: boolean }>(sql`
    with before as (select id, claimed_at is not null as was from payouts where claim_link_id = ${claimLinkId} for update)
    update payouts p set claimed_at = null,
      link_status = case when p.cancelled_at is not null then 'cancelled' else 'link_sent' end,
      updated_at = greatest(p.updated_at, now())
    from before where p.id = before.id
    returning p.id, before.was`);
  return rows.find((r) => r.was)?.id ?? null;
}

/** The link's refund arrived (the first refund transaction is kept). */
export async function markRefunded(
  tx: DbExecutor,
  payoutId: string,
  refundedAt: Date,
  txHash: string,
): Promise<void> {
  await tx.execute(sql`
    update payouts set refunded_at = ${refundedAt.toISOString()}::timestamptz,
      refund_tx_hash = coalesce(refund_tx_hash, ${txHash}), updated_at = greatest(updated_at, now())
    where id = ${payoutId}`);
}

/**
 * The refund's transfer was orphaned by a reorg: the refund is awaited again. Returns the payout
 * whose refund this took back (null when it was not refunded: a piece, nothing announced).
 */
export async function unmarkRefunded(tx: DbExecutor, claimLinkId: string): Promise<string | null> {
  const { rows } = await tx.execute<{ id: string; was: boolean }>(sql`
    with before as (select id, refunded_at is not null as was from payouts where claim_link_id = ${claimLinkId} for update)
    update payouts p set refunded_at = null, updated_at = greatest(p.updated_at, now())
    from before where p.id = before.id
    returning p.id, before.was`);
  return rows.find((r) => r.was)?.id ?? null;
}
