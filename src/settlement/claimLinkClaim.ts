import { allocatedTo } from '../chain/allocations.ts';
import { type MatchDecision, markApplied, type TransferRow, transferFact } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordEvent } from '../events/recordEvent.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import { chainTransferDetails } from '../ledger/rules/chainTransferFact.ts';
import {
  claimLinkClaimed,
  claimLinkClaimedAfterCancel,
  claimLinkClaimedAfterExpiry,
  claimLinkExpiresAt,
} from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { markClaimed } from '../payouts/chainSettlement.ts';
import { CANCEL_RACES } from '../payouts/closeLink.ts';
import {
  allocatePoolOutflow,
  type ClaimLinkSettlementDeps,
  type Link,
  linkBalances,
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
 * receivable when our books closed it first (an expiry, or a cancel the service accepted while the
 * claim was on chain); a claim of another value is booked at the link amount with a finding. Each
 * is allocated to the link (sweep, claim), so what is left unswept is read from allocations.
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
  if (await fundingIncomplete(tx, deps, row, link)) return { kind: 'deferred' };
  const unswept = await unsweptFee(tx, linkId, link.amount);
  if (unswept > 0n && (value === unswept || (value < unswept && value !== link.amount))) {
    await allocatePoolOutflow(tx, row, link, 'fee_sweep', null);
    await markApplied(tx, row.id, [FEE_SWEEP], linkId, storeId);
    return { kind: 'applied' };
  }
  const fact = transferFact(row);
  const held = payout.claimed_at || payout.refunded_at ? null : await linkBalances(tx, base);
  let outcome: RuleOutcome | null = null;
  if (held?.pool === link.amount) {
    outcome = claimLinkClaimed({ ...base, transfer: fact });
  } else if (held?.receivable === link.amount && payout.cancelled_at) {
    outcome = claimLinkClaimedAfterCancel({
      ...base,
      transfer: fact,
      cancelledAt: new Date(payout.cancelled_at),
    });
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
          what: 'money left the pool of a link whose books hold its amount neither in claim_pool nor in refund_receivable (claimed, refunded, or refunded in part already); nothing booked',
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
  const entryId = await post(tx, deps, outcome, storeId);
  await allocatePoolOutflow(tx, row, link, 'claim', entryId);
  await markClaimed(tx, payout.id, fact.occurredAt);
  const ref = { type: 'claim_link', id: linkId };
  const revision = await reversalCount(tx, ref, SETTLED_KIND.claimed);
  await recordEvent(
    tx,
    payoutSettledEvent(link, 'claimed', fact, revision, {
      after_expiry: held?.pool !== link.amount && !payout.cancelled_at,
      ...(held?.pool !== link.amount && payout.cancelled_at ? { after_cancel: true } : {}),
    }),
  );
  // Nothing is owed back any more: whichever close came first, the claim undid it.
  for (const kind of ['expiry_refund_overdue', 'refund_overdue', CANCEL_RACES])
    await resolveFinding(tx, kind, ref);
  await markApplied(tx, row.id, ['claim_link_claimed'], linkId, storeId);
  return { kind: 'applied' };
}

/**
 * How long money out of a pool waits for the pool's funding to be whole on chain (on the
 * settlement's clock, from the outflow's finality): a day, after which it is decided as it stands.
 */
export const POOL_OUTFLOW_WAITS_FOR_FUNDING_MS = 24 * 3_600_000;

/**
 * The link's funding pieces on chain are short of A (a partial deposit not topped up yet, or a
 * funding a reorg took away and the service has not sent again): nothing can be told apart in
 * what leaves the pool until it is whole. The fee sweep would be taken for the claim (the fee not
 * yet funded), and the claim for nothing. The outflow waits, for at most
 * POOL_OUTFLOW_WAITS_FOR_FUNDING_MS.
 */
async function fundingIncomplete(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  link: Link,
): Promise<boolean> {
  const waited = row.final_at ? deps.clock.now().getTime() - new Date(row.final_at).getTime() : 0;
  if (waited >= POOL_OUTFLOW_WAITS_FOR_FUNDING_MS) return false;
  const funded = await allocatedTo(tx, { type: 'claim_link', id: link.base.claimLinkId }, ['funding']);
  return funded < link.amount;
}

/** matched_as of the service's fee sweep out of a pool: booked nothing (rule 5 did), but counted. */
const FEE_SWEEP = 'claim_link_fee_sweep';

/**
 * The funding fee still in the pool, from the link's allocations: what its funding pieces exceed
 * the link amount by, less the sweeps already allocated. A piece or sweep orphaned by a reorg was
 * released (rule 3) and counts no more.
 */
async function unsweptFee(tx: DbExecutor, linkId: string, amount: bigint): Promise<bigint> {
  const obligation = { type: 'claim_link', id: linkId } as const;
  const funded = await allocatedTo(tx, obligation, ['funding']);
  if (funded <= amount) return 0n;
  const unswept = funded - amount - (await allocatedTo(tx, obligation, ['fee_sweep']));
  return unswept > 0n ? unswept : 0n;
}
