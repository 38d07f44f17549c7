import { sql } from 'drizzle-orm';
import { type MatchDecision, markApplied, type TransferRow } from '../chain/transferRow.ts';
import type { WatchedWallet } from '../chain/watchedWallets.ts';
import type { DbExecutor } from '../db/database.ts';
import { parseDecimalAmount } from '../money/decimalAmount.ts';
import { applyPayoutFromPool } from './claimLinkClaim.ts';
import { type ClaimLinkSettlementDeps, type Link, type PayoutRow, payoutColumns } from './claimLinkPool.ts';
import { applyRefund } from './claimLinkRefund.ts';

/**
 * A final transfer out of a link's pool wallet: back to custody, its refund (rule 8, closing the
 * link first if needed); to anyone else, the service's fee sweep (nothing to book) or the claim
 * (rule 6, or rule 6 out of the receivable when our books expired the link before the claim was
 * final), or a finding when the link cannot be claimed.
 */
export async function applyClaimLinkTransfer(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  pool: WatchedWallet,
): Promise<MatchDecision> {
  const payout = pool.claimLinkId
    ? (
        await tx.execute<PayoutRow>(sql`
          select ${payoutColumns} from payouts where claim_link_id = ${pool.claimLinkId} for update`)
      ).rows[0]
    : undefined;
  const token = deps.config.chains.token(Number(row.chain_id), row.token);
  if (!payout?.claim_link_id || !token || token.address !== payout.token_address) {
    await markApplied(tx, row.id, [], pool.claimLinkId ?? null, pool.storeIds[0] ?? null);
    return { kind: 'applied' };
  }
  // Anyone can emit a zero-value Transfer from any address (address poisoning: an ERC-20's
  // transferFrom(pool, custody, 0) needs no allowance): it moves nothing, so it is neither the
  // link's refund (which would close the link and book its whole amount as fees) nor its claim.
  if (BigInt(row.value) === 0n) {
    await markApplied(tx, row.id, [], payout.claim_link_id, payout.store_id);
    return { kind: 'applied' };
  }
  const link: Link = {
    payout,
    base: { storeId: payout.store_id, claimLinkId: payout.claim_link_id, token, amount: payout.amount },
    amount: parseDecimalAmount(payout.amount, token.decimals),
  };
  const custody = deps.config.stores
    .find((s) => s.storeId === payout.store_id)
    ?.wallets.get(Number(row.chain_id))
    ?.custody.toLowerCase();
  if (row.to_address === custody) return applyRefund(tx, deps, row, link, custody);
  return applyPayoutFromPool(tx, deps, row, link);
}
