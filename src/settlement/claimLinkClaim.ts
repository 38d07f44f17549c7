import { sql } from 'drizzle-orm';
import { type MatchDecision, markApplied, type TransferRow, transferFact } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordEvent } from '../events/recordEvent.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import { chainTransferDetails } from '../ledger/rules/chainTransferFact.ts';
import {
  claimLinkClaimed,
  claimLinkClaimedAfterExpiry,
  claimLinkExpiresAt,
} from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { markClaimed } from '../payouts/chainSettlement.ts';
import {
  type ClaimLinkSettlementDeps,
  type Link,
  linkBalances,
  type PayoutRow,
  payoutSettledEvent,
  post,
  SETTLED_KIND,
} from './claimLinkPool.ts';

/**
 * Money out of the pool to anyone but custody. The service first sweeps the funding fee out of
 * the pool (rule 5 booked it as payout_fees already): an outflow of exactly the fee not yet swept
 * is the sweep, even when it equals the link amount (the two are then the same sum, and the sweep
 * comes first: it is part of funding); a smaller one is part of it (the fee booked at funding may
 * hold an overpayment the sweep leaves for the refund), unless it is the link amount. Any other
 * outflow is the claim: rule 6 while the pool holds the link in our books, rule 6 out of the
 * receivable when our books expired it first; a claim of another value is booked at the link
 * amount with a finding.
 */
export async function applyPayoutFromPool(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  link: Link,
): Promise<MatchDecision> {
  const { payout, base } = link;
  const { storeId, claimLinkId: linkId } = base;
  const value = BigInt(row.value);
  const unswept = await unsweptFee(tx, row, payout, link.amount);
  if (unswept > 0n && (value === unswept || (value < unswept && value !== link.amount))) {
    await markApplied(tx, row.id, [FEE_SWEEP], linkId, storeId);
    return { kind: 'applied' };
  }
  const fact = transferFact(row);
  const held =
    payout.claimed_at || payout.cancelled_at || payout.refunded_at ? null : await linkBalances(tx, base);
  let outcome: RuleOutcome | null = null;
  if (held?.pool === link.amount) {
    outcome = claimLinkClaimed({ ...base, transfer: fact });
  } else if (held?.receivable === link.amount) {
    const expiredAt = payout.expired_at
      ? new Date(payout.expired_at)
      : claimLinkExpiresAt(new Date(payout.funded_at ?? fact.occurredAt));
    outcome = claimLinkClaimedAfterExpiry({ ...base, transfer: fact, expiredAt });
  }
  if (!outcome) {
    await recordFinding(
      tx,
      {
        kind: 'claim_link_unexplained_outflow',
        severity: 'warning',
        ref: { type: 'claim_link', id: linkId },
        details: {
          what: 'money left the pool of a link whose books hold its amount neither in claim_pool nor in refund_receivable (claimed, cancelled or refunded already); nothing booked',
          amount: payout.amount,
          claim_pool: held ? formatDecimalAmount(held.pool, base.token.decimals) : null,
          refund_receivable: held ? formatDecimalAmount(held.receivable, base.token.decimals) : null,
          claimed_at: payout.claimed_at,
          cancelled_at: payout.cancelled_at,
          refunded_at: payout.refunded_at,
          ...chainTransferDetails(fact),
        },
      },
      storeId,
    );
    await markApplied(tx, row.id, [], linkId, storeId);
    return { kind: 'applied' };
  }
  await post(tx, deps, outcome, storeId);
  await markClaimed(tx, payout.id, fact.occurredAt);
  const ref = { type: 'claim_link', id: linkId };
  const revision = await reversalCount(tx, ref, SETTLED_KIND.claimed);
  await recordEvent(
    tx,
    payoutSettledEvent(link, 'claimed', fact, revision, { after_expiry: held?.pool !== link.amount }),
  );
  await resolveFinding(tx, 'expiry_refund_overdue', ref);
  await markApplied(tx, row.id, ['claim_link_claimed'], linkId, storeId);
  return { kind: 'applied' };
}

/** matched_as of the service's fee sweep out of a pool: booked nothing (rule 5 did), but counted. */
const FEE_SWEEP = 'claim_link_fee_sweep';

/**
 * The funding fee still in the pool: what rule 5 booked as fee (the funding transfer X less the
 * link amount) less the sweeps already matched. Only blocks from the funding on are read, through
 * the (chain, state, block) index.
 */
async function unsweptFee(
  tx: DbExecutor,
  row: TransferRow,
  payout: PayoutRow,
  amount: bigint,
): Promise<bigint> {
  if (!payout.funding_tx_hash || !payout.claim_link_id) return 0n;
  const { rows } = await tx.execute<{ funded: string | null; swept: string | null }>(sql`
    with funding as (
      select sum(value) as funded, min(block_number) as from_block from chain_transfers
      where chain_id = ${row.chain_id}::bigint and tx_hash = ${payout.funding_tx_hash.toLowerCase()}
        and to_address = ${row.from_address} and state = 'final' and matched_ref = ${payout.claim_link_id}
        and matched_as like 'claim_link_funding%')
    select f.funded::text as funded, (
      select sum(t.value) from chain_transfers t
      where t.chain_id = ${row.chain_id}::bigint and t.state = 'final'
        and t.block_number between f.from_block and ${row.block_number}::bigint
        and t.from_address = ${row.from_address} and t.matched_as = ${FEE_SWEEP}
        and t.matched_ref = ${payout.claim_link_id})::text as swept
    from funding f`);
  const funded = BigInt(rows[0]?.funded ?? '0');
  if (funded <= amount) return 0n;
  const unswept = funded - amount - BigInt(rows[0]?.swept ?? '0');
  return unswept > 0n ? unswept : 0n;
}
