import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DbExecutor } from '../db/database.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { postEntry } from '../ledger/postEntry.ts';
import {
  type ClaimLinkFactBase,
  claimLinkClaimed,
  claimLinkFundingProven,
  claimLinkRefunded,
  isExpired,
} from '../ledger/rules/claimLinkRules.ts';
import { parseDecimalAmount } from '../money/decimalAmount.ts';
import { markCancelled } from '../payouts/closeLink.ts';
import { markExpired } from '../payouts/expireClaimLinks.ts';
import { recordFinding, resolveFinding } from '../recon/recordFinding.ts';
import { type MatchDecision, markApplied, type TransferRow, transferFact } from './transferRow.ts';
import type { WatchedWallet } from './watchedWallets.ts';

/**
 * The chain side of claim links (DESIGN.md section 6, rules 5 to 8): a custody outflow that funds
 * a link settles its fee and teaches us the link's pool wallet; out of that pool, a transfer back
 * to custody is the refund, a transfer of the link amount to anyone else is the claim, and
 * anything else is the service settling its own fee (booked already at funding): nothing.
 */
interface Deps {
  config: Pick<Config, 'stores' | 'chains'>;
  accounts: AccountCache;
  clock: Clock;
}

type PayoutRow = {
  id: string;
  store_id: string;
  claim_link_id: string | null;
  amount: string;
  token_address: string;
  funding_tx_hash: string | null;
  funded_at: Date | null;
  claimed_at: Date | null;
  cancelled_at: Date | null;
  expired_at: Date | null;
  refund_tx_hash: string | null;
};

const payoutColumns = sql.raw(
  'id, store_id, claim_link_id, amount, token_address, funding_tx_hash, funded_at, claimed_at, cancelled_at, expired_at, refund_tx_hash',
);

async function post(tx: DbExecutor, deps: Deps, outcome: RuleOutcome, storeId: string): Promise<boolean> {
  if (outcome.entry) await postEntry(tx, outcome.entry, { accounts: deps.accounts });
  for (const f of outcome.findings) await recordFinding(tx, f, storeId);
  return outcome.entry !== null;
}

/**
 * A final transfer out of a custody wallet: the funding of the payout whose funding_tx_hash it is,
 * or, when the create call's answer was lost (a timeout resolved by an idempotent retry, which
 * returns no funding hash), of the oldest unmatched payout of that store and token it covers.
 * 'unmatched' when no payout explains it (rule 9 then).
 */
export async function applyCustodyOutflow(
  tx: DbExecutor,
  deps: Deps,
  row: TransferRow,
  custody: WatchedWallet,
): Promise<MatchDecision | 'unmatched'> {
  const token = deps.config.chains.token(Number(row.chain_id), row.token);
  if (!token) return 'unmatched';
  let payout = (
    await tx.execute<PayoutRow>(sql`
      select ${payoutColumns} from payouts
      where chain_id = ${Number(row.chain_id)} and lower(funding_tx_hash) = ${row.tx_hash} for update`)
  ).rows[0];
  let byAmount = false;
  if (!payout) {
    const candidates = await tx.execute<PayoutRow>(sql`
      select ${payoutColumns} from payouts
      where chain_id = ${Number(row.chain_id)} and token_address = ${token.address}
        and store_id in (${sql.join(
          custody.storeIds.map((s) => sql`${s}`),
          sql`, `,
        )})
        and pool_address is null and funding_tx_hash is null and create_outcome <> 'failed'
      order by created_at for update`);
    payout = candidates.rows.find((p) => parseDecimalAmount(p.amount, token.decimals) <= BigInt(row.value));
    byAmount = payout !== undefined;
  }
  if (!payout) return 'unmatched';
  // The create call has not told us the link yet (in flight, or its outcome unknown): wait for it.
  if (!payout.claim_link_id) return { kind: 'deferred' };
  if (payout.token_address !== token.address) return 'unmatched';

  const linkId = payout.claim_link_id;
  const base: ClaimLinkFactBase = {
    storeId: payout.store_id,
    claimLinkId: linkId,
    token,
    amount: payout.amount,
  };
  const booked = await post(
    tx,
    deps,
    claimLinkFundingProven({ ...base, transfer: transferFact(row) }),
    payout.store_id,
  );
  if (byAmount) {
    await recordFinding(
      tx,
      {
        kind: 'funding_matched_by_amount',
        severity: 'info',
        ref: { type: 'claim_link', id: linkId },
        details: {
          tx_hash: row.tx_hash,
          what: 'the create answer carried no funding hash; matched by store, token and amount',
        },
      },
      payout.store_id,
    );
  }
  await tx.execute(sql`
    update payouts set pool_address = ${row.to_address}, funding_tx_hash = coalesce(funding_tx_hash, ${row.tx_hash}),
      updated_at = now()
    where id = ${payout.id}`);
  await tx.execute(sql`
    insert into chain_watched_wallets (chain_id, address, role, store_id, claim_link_id, from_block)
    values (${Number(row.chain_id)}, ${row.to_address}, 'pool', ${payout.store_id}, ${linkId}, ${row.block_number}::bigint)
    on conflict (chain_id, address) do nothing`);
  await markApplied(
    tx,
    row.id,
    [booked ? 'claim_link_funding_fee' : 'claim_link_funding'],
    linkId,
    payout.store_id,
  );
  return { kind: 'applied' };
}

/** A final transfer out of a link's pool wallet: its refund (rule 8, closing it first if needed), its claim (rule 6), or nothing. */
export async function applyClaimLinkTransfer(
  tx: DbExecutor,
  deps: Deps,
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
  const storeId = payout.store_id;
  const linkId = payout.claim_link_id;
  const base: ClaimLinkFactBase = { storeId, claimLinkId: linkId, token, amount: payout.amount };
  const fact = transferFact(row);
  const custody = deps.config.stores
    .find((s) => s.storeId === storeId)
    ?.wallets.get(Number(row.chain_id))
    ?.custody.toLowerCase();

  if (row.to_address === custody) {
    if (!payout.cancelled_at && !payout.expired_at) await closeLink(tx, deps, payout, base, row);
    await post(tx, deps, claimLinkRefunded({ ...base, transfer: fact }), storeId);
    await tx.execute(sql`
      update payouts set refunded_at = ${deps.clock.now().toISOString()}::timestamptz,
        refund_tx_hash = coalesce(refund_tx_hash, ${row.tx_hash}), updated_at = now()
      where id = ${payout.id}`);
    const ref = { type: 'claim_link', id: linkId };
    await resolveFinding(tx, 'refund_overdue', ref);
    await resolveFinding(tx, 'expiry_refund_overdue', ref);
    await markApplied(tx, row.id, ['claim_link_refunded'], linkId, storeId);
    return { kind: 'applied' };
  }
  const open = !payout.claimed_at && !payout.cancelled_at && !payout.expired_at;
  if (open && BigInt(row.value) === parseDecimalAmount(payout.amount, token.decimals)) {
    await post(tx, deps, claimLinkClaimed({ ...base, transfer: fact }), storeId);
    await tx.execute(sql`
      update payouts set claimed_at = ${fact.occurredAt.toISOString()}::timestamptz, link_status = 'claimed',
        updated_at = now()
      where id = ${payout.id}`);
    await markApplied(tx, row.id, ['claim_link_claimed'], linkId, storeId);
    return { kind: 'applied' };
  }
  await markApplied(tx, row.id, [], linkId, storeId);
  return { kind: 'applied' };
}

/**
 * A refund arrived for a link our books still hold open: it expired (14 days after funding) or it
 * was cancelled outside stablebooks (the service's dashboard). Rule 7 first, through the same
 * functions as the expiry job and the cancel, so rule 8 clears a receivable that exists.
 */
async function closeLink(
  tx: DbExecutor,
  deps: Deps,
  payout: PayoutRow,
  base: ClaimLinkFactBase,
  row: TransferRow,
): Promise<void> {
  const payoutDeps = { chains: deps.config.chains, accounts: deps.accounts, clock: deps.clock };
  const now = deps.clock.now();
  if (payout.funded_at && isExpired(new Date(payout.funded_at), now)) {
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
