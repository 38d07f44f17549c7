import { sql } from 'drizzle-orm';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { account, accountCode, type Token } from '../ledger/accounts.ts';
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
import {
  type MatchDecision,
  markApplied,
  type TransferRow,
  transferColumns,
  transferFact,
} from './transferRow.ts';
import { type WatchedWallet, walletRoles } from './watchedWallets.ts';

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
  /** How long a final transfer may wait for what explains it before a person is told. */
  unmatchedGraceMs: number;
}

type PayoutRow = {
  id: string;
  store_id: string;
  claim_link_id: string | null;
  amount: string;
  token_address: string;
  funding_tx_hash: string | null;
  pool_address: string | null;
  funded_at: Date | null;
  reference_id: string;
  create_outcome: string;
  claimed_at: Date | null;
  cancelled_at: Date | null;
  expired_at: Date | null;
  refund_tx_hash: string | null;
  refunded_at: Date | null;
};

const payoutColumns = sql.raw(
  'id, store_id, claim_link_id, amount, token_address, funding_tx_hash, pool_address, funded_at, reference_id, create_outcome, claimed_at, cancelled_at, expired_at, refund_tx_hash, refunded_at',
);

async function post(tx: DbExecutor, deps: Deps, outcome: RuleOutcome, storeId: string): Promise<boolean> {
  if (outcome.entry) await postEntry(tx, outcome.entry, { accounts: deps.accounts });
  for (const f of outcome.findings) await recordFinding(tx, f, storeId);
  return outcome.entry !== null;
}

/**
 * A final transfer out of a custody wallet: a log of the funding of a claim link, or 'unmatched'
 * when no payout explains it (rule 9 then). A funding is what one transaction sends from custody
 * to one pool: its logs are summed and booked once (rule 5's fee, keyed by the first log), so a
 * funding paid as principal and fee apart books its whole fee, and a transaction funding several
 * links gives each its own pool's logs.
 *
 * - Into a pool we know: another log of its funding (or the funding re-included after a reorg),
 *   when the transaction is that link's funding_tx_hash; else not a funding.
 * - Into a wallet of STORES_FILE (merchant, custody): never a funding, and never a pool.
 * - Else, the payouts whose funding_tx_hash is the transaction and whose pool is not known yet
 *   share its pools: each gets the pool whose sum exceeds its amount by the least.
 * - Else, when the create call's answer was lost (a timeout resolved by an idempotent retry,
 *   which returns no funding hash): by amount, see `fundedByAmount`.
 */
export async function applyCustodyOutflow(
  tx: DbExecutor,
  deps: Deps,
  row: TransferRow,
  custody: WatchedWallet,
): Promise<MatchDecision | 'unmatched'> {
  const chainId = Number(row.chain_id);
  const token = deps.config.chains.token(chainId, row.token);
  if (!token) return 'unmatched';
  const pools = await fundingPools(tx, row);
  const roles = await walletRoles(tx, deps.config, chainId, [...pools.keys()]);
  const funding = pools.get(row.to_address);
  if (!funding) return 'unmatched';
  const role = roles.get(row.to_address);
  // The payouts that name this transaction as their funding and have no pool yet, and the
  // addresses it pays that are nobody's wallet: the pools they can have.
  const byHash = (
    await tx.execute<PayoutRow>(sql`
      select ${payoutColumns} from payouts
      where chain_id = ${chainId} and lower(funding_tx_hash) = ${row.tx_hash} and pool_address is null
        and token_address = ${token.address}
      order by created_at, id for update`)
  ).rows;
  const open = [...pools.values()].filter((p) => !roles.has(p.to));

  if (role) {
    if (role.role === 'pool' && role.claimLinkId) {
      // Another log of that pool's funding, or the funding re-included after a reorg.
      const known = (
        await tx.execute<PayoutRow>(sql`
          select ${payoutColumns} from payouts
          where claim_link_id = ${role.claimLinkId} and lower(funding_tx_hash) = ${row.tx_hash}
            and token_address = ${token.address} for update`)
      ).rows[0];
      if (known) return bookFunding(tx, deps, row, known, token, funding, null);
    }
    // An address with a role is never learnt as a pool, and never matched by amount: a custody
    // outflow into a merchant wallet, custody, or a pool funded before is not a funding (rule 9).
    // When a link's funding transaction pays nothing else, say why the link has no pool.
    if (open.length === 0) for (const payout of byHash) await refusePool(tx, row, payout, role.role);
    return 'unmatched';
  }
  const payout = shareFundingTransaction(byHash, open, token.decimals).get(row.to_address);
  if (payout) return bookFunding(tx, deps, row, payout, token, funding, null);

  const byAmount = await fundedByAmount(tx, row, custody, token, funding.value);
  if (!byAmount) return 'unmatched';
  return bookFunding(tx, deps, row, byAmount.payout, token, funding, byAmount);
}

/**
 * How far a funding matched by amount may exceed the link amount: 1 coin plus 1% of the amount
 * (rounded up to a base unit). The spec names no fee (only "amount plus fees"), the create
 * result carries none (funded_amount is the principal) and the config has none; the sandbox's is
 * 0.5 coin. A bound is what keeps a larger outflow (an owner withdrawal, another link's funding)
 * from being booked as this link's funding with the difference as its fee. A funding above it is
 * left to rule 9 with its finding, for a person, rather than guessed.
 */
export const BY_AMOUNT_MAX_FEE_COINS = '1';
export const BY_AMOUNT_MAX_FEE_BPS = 100n;

/**
 * How much earlier than the payout's row (created before the create call) a funding's block time
 * may be: block times are whole seconds, and the chain's clock is not ours.
 */
export const BY_AMOUNT_CLOCK_SLACK_MS = 5 * 60_000;

export function maxFundingFeeByAmount(amount: bigint, decimals: number): bigint {
  return (
    parseDecimalAmount(BY_AMOUNT_MAX_FEE_COINS, decimals) +
    (amount * BY_AMOUNT_MAX_FEE_BPS + 9_999n) / 10_000n
  );
}

/** The logs of one transaction from one custody wallet to one address: one funding, if any. */
interface FundingPool {
  to: string;
  /** Its final logs in log order; the first carries the funding entry's key. */
  logs: TransferRow[];
  value: bigint;
}

/** Every address the row's transaction pays from the row's custody wallet in its token, with its logs. */
async function fundingPools(tx: DbExecutor, row: TransferRow): Promise<Map<string, FundingPool>> {
  const { rows } = await tx.execute<TransferRow>(sql`
    select ${transferColumns} from chain_transfers
    where chain_id = ${row.chain_id}::bigint and tx_hash = ${row.tx_hash} and block_hash = ${row.block_hash}
      and from_address = ${row.from_address} and token = ${row.token} and state = 'final'
    order by log_index`);
  const pools = new Map<string, FundingPool>();
  for (const log of rows) {
    const pool = pools.get(log.to_address) ?? { to: log.to_address, logs: [], value: 0n };
    pool.logs.push(log);
    pool.value += BigInt(log.value);
    pools.set(log.to_address, pool);
  }
  return pools;
}

/**
 * The payouts that name one transaction as their funding, each given one of its pools (addresses
 * that are nobody's wallet yet): pairs whose pool covers the amount, the smallest excess first;
 * then, as the service named this transaction, what is left in order (creation, log order), to
 * be booked short with a `funding_mismatch` finding.
 */
function shareFundingTransaction(
  payouts: readonly PayoutRow[],
  pools: readonly FundingPool[],
  decimals: number,
): Map<string, PayoutRow> {
  const given = new Map<string, PayoutRow>();
  const taken = new Set<string>();
  const pairs = payouts.flatMap((payout, order) => {
    const amount = parseDecimalAmount(payout.amount, decimals);
    return pools
      .filter((pool) => pool.value >= amount)
      .map((pool) => ({ payout, order, pool, excess: pool.value - amount }));
  });
  pairs.sort((a, b) =>
    a.excess !== b.excess
      ? a.excess < b.excess
        ? -1
        : 1
      : a.order - b.order || (a.pool.logs[0]?.log_index ?? 0) - (b.pool.logs[0]?.log_index ?? 0),
  );
  for (const { payout, pool } of pairs) {
    if (given.has(pool.to) || taken.has(payout.id)) continue;
    given.set(pool.to, payout);
    taken.add(payout.id);
  }
  const leftPayouts = payouts.filter((p) => !taken.has(p.id));
  const leftPools = pools.filter((p) => !given.has(p.to));
  leftPayouts.forEach((payout, i) => {
    const pool = leftPools[i];
    if (pool) given.set(pool.to, payout);
  });
  return given;
}

const FUNDING_AWAITS_OUTCOME = 'funding_awaits_create_outcome';

/** A payout matched by amount, and the others that could have been. */
interface ByAmount {
  payout: PayoutRow;
  others: PayoutRow[];
}

/**
 * A custody outflow to an address that is nobody's wallet yet, when no payout names its
 * transaction: the funding of a payout whose create answer was lost (no funding hash, no pool),
 * of that store and token, created before the outflow (with `BY_AMOUNT_CLOCK_SLACK_MS`), whose
 * amount the outflow covers with at most `maxFundingFeeByAmount` over. Of several, the one it
 * exceeds by the least (the smallest fee), then the oldest.
 */
async function fundedByAmount(
  tx: DbExecutor,
  row: TransferRow,
  custody: WatchedWallet,
  token: Token,
  value: bigint,
): Promise<ByAmount | undefined> {
  const latest = new Date(new Date(row.block_time).getTime() + BY_AMOUNT_CLOCK_SLACK_MS).toISOString();
  const { rows } = await tx.execute<PayoutRow>(sql`
    select ${payoutColumns} from payouts
    where chain_id = ${Number(row.chain_id)} and token_address = ${token.address}
      and store_id in (${sql.join(
        custody.storeIds.map((s) => sql`${s}`),
        sql`, `,
      )})
      and pool_address is null and funding_tx_hash is null and create_outcome <> 'failed'
      and created_at <= ${latest}::timestamptz
    order by created_at, id for update`);
  const fits = rows
    .map((payout, order) => ({
      payout,
      order,
      excess: value - parseDecimalAmount(payout.amount, token.decimals),
    }))
    .filter(
      ({ payout, excess }) =>
        excess >= 0n &&
        excess <= maxFundingFeeByAmount(parseDecimalAmount(payout.amount, token.decimals), token.decimals),
    )
    .sort((a, b) => (a.excess !== b.excess ? (a.excess < b.excess ? -1 : 1) : a.order - b.order));
  const [best, ...others] = fits;
  return best ? { payout: best.payout, others: others.map((o) => o.payout) } : undefined;
}

/**
 * Books the funding `funding` (all its logs) of `payout` from one of its logs, `row`: rule 5's
 * fee, keyed by the first log, so each log books the same entry; the pool learnt on the first.
 */
async function bookFunding(
  tx: DbExecutor,
  deps: Deps,
  row: TransferRow,
  payout: PayoutRow,
  token: Token,
  funding: FundingPool,
  byAmount: ByAmount | null,
): Promise<MatchDecision | 'unmatched'> {
  // The create call has not told us the link yet (in flight, or its outcome unknown): wait for it.
  // Past the grace, say so: the outflow waits (and custody's proof fails) until someone learns
  // the outcome, which only running the same create again does when it is unknown.
  if (!payout.claim_link_id) {
    const waited = row.final_at ? deps.clock.now().getTime() - new Date(row.final_at).getTime() : 0;
    if (waited >= deps.unmatchedGraceMs) {
      await recordFinding(
        tx,
        {
          kind: FUNDING_AWAITS_OUTCOME,
          severity: 'warning',
          ref: { type: 'payout', id: payout.id },
          details: {
            reference_id: payout.reference_id,
            create_outcome: payout.create_outcome,
            amount: payout.amount,
            tx_hash: row.tx_hash,
            what: "a custody outflow that may be this payout's funding waits for its create outcome",
            action: `run the same payouts create again (reference_id ${payout.reference_id}, same amount) to learn it`,
          },
        },
        payout.store_id,
      );
    }
    return { kind: 'deferred' };
  }
  await resolveFinding(tx, FUNDING_AWAITS_OUTCOME, { type: 'payout', id: payout.id });
  const linkId = payout.claim_link_id;
  if (!payout.pool_address) {
    const learnt = await tx.execute(sql`
      insert into chain_watched_wallets (chain_id, address, role, store_id, claim_link_id, from_block)
      values (${Number(row.chain_id)}, ${row.to_address}, 'pool', ${payout.store_id}, ${linkId}, ${row.block_number}::bigint)
      on conflict (chain_id, address) do nothing
      returning address`);
    if (learnt.rows.length === 0) {
      // Another transaction learnt this address for another link since we looked.
      const holder = (
        await tx.execute<{ claim_link_id: string | null }>(sql`
          select claim_link_id from chain_watched_wallets
          where chain_id = ${Number(row.chain_id)} and address = ${row.to_address}`)
      ).rows[0];
      if (holder?.claim_link_id !== linkId) {
        await refusePool(tx, row, payout, 'pool');
        return 'unmatched';
      }
    }
  }
  const base: ClaimLinkFactBase = {
    storeId: payout.store_id,
    claimLinkId: linkId,
    token,
    amount: payout.amount,
  };
  const [first, ...others] = funding.logs.map(transferFact);
  if (!first) return 'unmatched';
  const booked = await post(
    tx,
    deps,
    claimLinkFundingProven({ ...base, transfer: first, otherLogs: others }),
    payout.store_id,
  );
  if (byAmount) {
    await recordFinding(
      tx,
      {
        kind: 'funding_matched_by_amount',
        severity: byAmount.others.length > 0 ? 'warning' : 'info',
        ref: { type: 'claim_link', id: linkId },
        details: {
          tx_hash: row.tx_hash,
          funded: formatDecimalAmount(funding.value, token.decimals),
          amount: payout.amount,
          what:
            byAmount.others.length > 0
              ? 'the create answer carried no funding hash; matched by store, token and amount to the payout it exceeds by the least, of several it could fund'
              : 'the create answer carried no funding hash; matched by store, token and amount',
          other_candidates: byAmount.others.map((p) => ({
            payout_id: p.id,
            claim_link_id: p.claim_link_id,
            amount: p.amount,
          })),
        },
      },
      payout.store_id,
    );
  }
  await tx.execute(sql`
    update payouts set pool_address = coalesce(pool_address, ${row.to_address}),
      funding_tx_hash = coalesce(funding_tx_hash, ${row.tx_hash}),
      -- A payout whose answer carried no funding hash was dated by a replay, maybe days after the
      -- lost answer: its funding's block dates it instead, or the 14-day expiry (and the reading
      -- of its refund) would come that much later. An answer with the hash came back with the
      -- funding and dates it well; and the sandbox's chain does not follow its clock.
      funded_at = case when funding_tx_hash is null
                       then least(funded_at, ${new Date(row.block_time).toISOString()}::timestamptz)
                       else funded_at end,
      updated_at = now()
    where id = ${payout.id}`);
  // The entry's key is the first log's: that row is what rule 3 reverses it through.
  const keyed = booked && first.logIndex === row.log_index;
  await markApplied(
    tx,
    row.id,
    [keyed ? 'claim_link_funding_fee' : 'claim_link_funding'],
    linkId,
    payout.store_id,
  );
  return { kind: 'applied' };
}

/** A link's funding pays an address that already has a role: not learnt as its pool, a finding. */
async function refusePool(tx: DbExecutor, row: TransferRow, payout: PayoutRow, role: string): Promise<void> {
  await recordFinding(
    tx,
    {
      kind: 'claim_link_pool_refused',
      severity: 'warning',
      ref: { type: 'claim_link', id: payout.claim_link_id ?? payout.id },
      details: {
        what: `the funding transaction pays an address that is already a ${role} wallet; it is not learnt as this link's pool`,
        payout_id: payout.id,
        address: row.to_address,
        role,
        tx_hash: row.tx_hash,
        log_index: row.log_index,
      },
    },
    payout.store_id,
  );
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
