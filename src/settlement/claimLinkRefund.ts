import { allocate } from '../chain/allocations.ts';
import { type MatchDecision, markApplied, type TransferRow, transferFact } from '../chain/transferRow.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordEvent } from '../events/recordEvent.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import { chainTransferDetails } from '../ledger/rules/chainTransferFact.ts';
import { unmatchedTransfer } from '../ledger/rules/chainTransferRules.ts';
import { type ClaimLinkFactBase, claimLinkRefunded, isExpired } from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { markRefunded } from '../payouts/chainSettlement.ts';
import { CANCEL_RACES, markCancelled } from '../payouts/closeLink.ts';
import { markExpired } from '../payouts/expireClaimLinks.ts';
import {
  allocatePoolOutflow,
  type ClaimLinkSettlementDeps,
  type Link,
  linkBalances,
  type PayoutRow,
  payoutSettledEvent,
  post,
  SETTLED_KIND,
} from './claimLinkPool.ts';

/**
 * A final transfer out of a link's pool back to custody: a piece of the link's refund (rule 8),
 * closing the link first (rule 7) when our books still hold it open. The refund is whole, and the
 * payout refunded, with the piece that clears the receivable. Custody's inflow is decided with
 * the pool's outflow (inflowToo).
 */
export async function applyRefund(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  link: Link,
  custody: string,
): Promise<MatchDecision> {
  const { payout, base } = link;
  const { storeId, claimLinkId: linkId } = base;
  const fact = transferFact(row);
  // A link our books saw claimed owes no refund: closing it now would book a cancel it never had.
  if (!payout.claimed_at && !payout.cancelled_at && !payout.expired_at)
    await closeLink(tx, deps, payout, base, row);
  const held = await linkBalances(tx, base);
  if (held.receivable <= 0n) {
    // Rule 8 clears the receivable rule 7 created. Without one (claimed, refunded whole already,
    // or a close that conflicted), posting it would leave a negative receivable nobody looks at:
    // suspense (rule 9) keeps custody proven and the money visible until a person decides.
    const outcome = unmatchedTransfer({
      storeId,
      transfer: fact,
      token: base.token,
      wallet: { address: custody as `0x${string}`, role: 'custody' },
    });
    const booked = await post(tx, deps, outcome, storeId);
    // Custody's side waits in suspense, as rule 9 allocates it.
    if (booked !== null)
      await allocate(tx, {
        transferId: row.id,
        side: 'in',
        obligation: { type: 'suspense', id: row.id },
        purpose: 'unmatched',
        amount: BigInt(row.value),
        rule: 'rule 9',
        entryId: booked,
        storeId,
      });
    await recordFinding(
      tx,
      {
        kind: 'claim_link_refund_unexpected',
        severity: 'warning',
        ref: { type: 'claim_link', id: linkId },
        details: {
          what: 'a refund arrived for a link whose books hold no receivable for it; booked to suspense',
          amount: payout.amount,
          receivable: formatDecimalAmount(held.receivable, base.token.decimals),
          claimed_at: payout.claimed_at,
          refunded_at: payout.refunded_at,
          ...chainTransferDetails(fact),
        },
      },
      storeId,
    );
    await markApplied(tx, row.id, booked !== null ? ['transfer_in_unmatched'] : [], linkId, storeId);
    return { kind: 'applied', inflowToo: true };
  }
  const entryId = await post(
    tx,
    deps,
    claimLinkRefunded({ ...base, transfer: fact, receivable: held.receivable }),
    storeId,
  );
  await allocatePoolOutflow(tx, row, link, 'refund', entryId);
  if (fact.amount < held.receivable) {
    // A piece: the rest is still owed (refund_overdue watches it, as it does a refund not begun),
    // and the pool stays open (watchedWallets closes it on `claim_link_refunded` only).
    await markApplied(tx, row.id, [REFUND_PIECE], linkId, storeId);
    return { kind: 'applied', inflowToo: true };
  }
  await markRefunded(tx, payout.id, deps.clock.now(), row.tx_hash);
  const ref = { type: 'claim_link', id: linkId };
  const revision = await reversalCount(tx, ref, SETTLED_KIND.refunded);
  await recordEvent(tx, payoutSettledEvent(link, 'refunded', fact, revision));
  await resolveFinding(tx, 'refund_overdue', ref);
  await resolveFinding(tx, 'expiry_refund_overdue', ref);
  await resolveFinding(tx, CANCEL_RACES, ref);
  await markApplied(tx, row.id, ['claim_link_refunded'], linkId, storeId);
  return { kind: 'applied', inflowToo: true };
}

/** matched_as of a refund's piece that left part of the receivable owed. */
export const REFUND_PIECE = 'claim_link_refund_piece';

/**
 * A refund arrived for a link our books still hold open: it expired (14 days after funding) or it
 * was cancelled outside stablebooks (the service's dashboard). Rule 7 first, through the same
 * functions as the expiry job and the cancel, so rule 8 clears a receivable that exists.
 */
async function closeLink(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  payout: PayoutRow,
  base: ClaimLinkFactBase,
  row: TransferRow,
): Promise<void> {
  const payoutDeps = { chains: deps.config.chains, accounts: deps.accounts, clock: deps.clock };
  const now = deps.clock.now();
  // An expiry once the 14 days since the funding have passed. Judged on our clock, not the
  // refund's block time: the sandbox's clock moves without its chain's, and a cancel refund read
  // only after the 14 days (downtime) is therefore still taken for an expiry. (A link the service
  // reported `expired` is no different: rule 7's expiry entry needs the 14 days on our clock.)
  const expired = payout.funded_at !== null && isExpired(new Date(payout.funded_at), now);
  if (expired) {
    if (await markExpired(tx, payoutDeps, payout.id, now)) return;
  }
  await markCancelled(tx, payoutDeps, payout.id, 'chain');
  await recordFinding(
    tx,
    {
      kind: 'cancelled_outside_stablebooks',
      severity: 'info',
      ref: { type: 'claim_link', id: base.claimLinkId },
      details: {
        refund_tx_hash: row.tx_hash,
        what: 'a refund arrived for a link stablebooks did not cancel',
      },
    },
    base.storeId,
  );
}
