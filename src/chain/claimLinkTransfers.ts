import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DbExecutor } from '../db/database.ts';
import { account, accountCode } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { chainTransferDetails } from '../ledger/rules/chainTransferFact.ts';
import { unmatchedTransfer } from '../ledger/rules/chainTransferRules.ts';
import {
  type ClaimLinkFactBase,
  claimLinkClaimed,
  claimLinkClaimedAfterExpiry,
  claimLinkExpiresAt,
  claimLinkFundingProven,
  claimLinkRefunded,
  isExpired,
} from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import { markCancelled } from '../payouts/closeLink.ts';
import { markExpired } from '../payouts/expireClaimLinks.ts';
import { recordFinding, resolveFinding } from '../recon/recordFinding.ts';
import { type MatchDecision, markApplied, type TransferRow, transferFact } from './transferRow.ts';
import type { WatchedWallet } from './watchedWallets.ts';

/**
 * The chain side of claim links (DESIGN.md section 6, rules 5 to 8): a custody outflow that funds
 * a link settles its fee and teaches us the link's pool wallet; out of that pool, a transfer back
 * to custody is the refund, the fee booked at funding leaving to anyone else is the service's
 * sweep (nothing to book), and anything else is the claim. Which entry a claim or refund gets is
 * decided by what the ledger holds for the link (claim_pool or refund_receivable), not by the
 * payout's timestamps alone, so a claim that became final after our expiry, a reorg that undid
 * either, or a second refund all land where the money is.
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
  refunded_at: Date | null;
};

const payoutColumns = sql.raw(
  'id, store_id, claim_link_id, amount, token_address, funding_tx_hash, funded_at, claimed_at, cancelled_at, expired_at, refund_tx_hash, refunded_at',
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

/** A payout with its link, as the pool matchers below use it. */
interface Link {
  payout: PayoutRow;
  base: ClaimLinkFactBase;
  /** The link amount in base units. */
  amount: bigint;
}

/**
 * A final transfer out of a link's pool wallet: back to custody, its refund (rule 8, closing the
 * link first if needed); to anyone else, the service's fee sweep (nothing to book) or the claim
 * (rule 6, or rule 6 out of the receivable when our books expired the link before the claim was
 * final), or a finding when the link cannot be claimed.
 */
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

async function applyRefund(
  tx: DbExecutor,
  deps: Deps,
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
  if (held.receivable !== link.amount) {
    // Rule 8 clears the receivable rule 7 created. Without one (claimed, refunded already, or a
    // close that conflicted), posting it would leave a negative receivable nobody looks at:
    // suspense (rule 9) keeps custody proven and the money visible until a person decides.
    const outcome = unmatchedTransfer({
      storeId,
      transfer: fact,
      token: base.token,
      wallet: { address: custody as `0x${string}`, role: 'custody' },
    });
    const booked = await post(tx, deps, outcome, storeId);
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
    await markApplied(tx, row.id, booked ? ['transfer_in_unmatched'] : [], linkId, storeId);
    return { kind: 'applied' };
  }
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
async function applyPayoutFromPool(
  tx: DbExecutor,
  deps: Deps,
  row: TransferRow,
  link: Link,
): Promise<MatchDecision> {
  const { payout, base } = link;
  const { storeId, claimLinkId: linkId } = base;
  const value = BigInt(row.value);
  // Anyone can emit a zero-value Transfer from any address (address poisoning): it moves nothing.
  if (value === 0n) {
    await markApplied(tx, row.id, [], linkId, storeId);
    return { kind: 'applied' };
  }
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
  // The claim replaces the expiry: expired_at goes, so the link is reported claimed, not both;
  // the finding keeps when our books expired it.
  await tx.execute(sql`
    update payouts set claimed_at = ${fact.occurredAt.toISOString()}::timestamptz, link_status = 'claimed',
      expired_at = null, updated_at = now()
    where id = ${payout.id}`);
  await resolveFinding(tx, 'expiry_refund_overdue', { type: 'claim_link', id: linkId });
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

/** What the ledger holds for one link in claim_pool and refund_receivable (its own entries only). */
async function linkBalances(
  tx: DbExecutor,
  base: ClaimLinkFactBase,
): Promise<{ pool: bigint; receivable: bigint }> {
  const poolCode = accountCode(account('assets:claim_pool', base.storeId, base.token));
  const receivableCode = accountCode(account('assets:refund_receivable', base.storeId, base.token));
  const { rows } = await tx.execute<{ code: string; balance: string }>(sql`
    select a.code, sum(p.amount)::text as balance
    from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'claim_link' and e.ref_id = ${base.claimLinkId}
      and a.code in (${poolCode}, ${receivableCode})
    group by a.code`);
  const of = (code: string) => BigInt(rows.find((r) => r.code === code)?.balance ?? '0');
  return { pool: of(poolCode), receivable: of(receivableCode) };
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
