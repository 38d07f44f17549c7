import { sql } from 'drizzle-orm';
import {
  type MatchDecision,
  markApplied,
  type TransferRow,
  transferColumns,
  transferFact,
} from '../chain/transferRow.ts';
import { type WatchedWallet, walletRoles } from '../chain/watchedWallets.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import { postEntry } from '../ledger/postEntry.ts';
import type { ClaimLinkFactBase } from '../ledger/rules/claimLinkRules.ts';
import { claimLinkFundingFeeKey, claimLinkFundingProven } from '../ledger/rules/claimLinkRules.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import { recordFunding } from '../payouts/chainSettlement.ts';
import { allocateFundingPiece, earlierPieces, postedEntryId } from './claimLinkFundingPieces.ts';
import { type ClaimLinkSettlementDeps, type PayoutRow, payoutColumns } from './claimLinkPool.ts';

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
  deps: ClaimLinkSettlementDeps,
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
      // A piece of that link's funding, whatever its hash: another log of it, a top-up of a
      // partial deposit, a second funding, or one sent again after a reorg; while the link is
      // open (not claimed, not refunded) and in its token.
      const open = (
        await tx.execute<PayoutRow>(sql`
          select ${payoutColumns} from payouts
          where claim_link_id = ${role.claimLinkId} and token_address = ${token.address}
            and claimed_at is null and refunded_at is null for update`)
      ).rows[0];
      if (open) return bookFunding(tx, deps, row, open, token, funding, null);
    }
    // An address with a role is never learnt as a pool, and never matched by amount: a custody
    // outflow into a merchant wallet, custody, or the pool of a link claimed or refunded is not a
    // funding (rule 9).
    // When a link's funding transaction pays nothing else, say why the link has no pool.
    if (open.length === 0) for (const payout of byHash) await refusePool(tx, row, payout, role.role);
    return 'unmatched';
  }
  const payout = shareFundingTransaction(byHash, open, token.decimals).get(row.to_address);
  if (payout) return bookFunding(tx, deps, row, payout, token, funding, null);

  const byAmount = await fundedByAmount(tx, row, custody, token, funding.value);
  if (!byAmount) return 'unmatched';
  if (byAmount.payout.claim_link_id)
    return bookFunding(tx, deps, row, byAmount.payout, token, funding, byAmount);
  return passOverWaiting(tx, deps, row, byAmount, token, funding);
}

/**
 * The best candidate by amount has no link yet (its create outcome is not known): the outflow
 * waits for it, as booking it to rule 9 and then rule 5 on the replay would credit custody
 * twice. Once the outflow has been final for the grace (a create call answers within about 90 s,
 * so an answer carrying this transaction's hash would have come), a candidate behind it that has
 * a link takes the funding instead of waiting behind a payout that may never be settled; each
 * waiting payout passed over gets `funding_awaits_create_outcome` (resolved when a funding is
 * booked to it). With no such candidate, the outflow waits (with that finding after the grace).
 */
async function passOverWaiting(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  byAmount: ByAmount,
  token: Token,
  funding: FundingPool,
): Promise<MatchDecision | 'unmatched'> {
  const waiting = byAmount.payout;
  const linked = finalForGrace(deps, row) ? byAmount.others.find((p) => p.claim_link_id) : undefined;
  if (!linked) return awaitCreateOutcome(tx, deps, row, waiting);
  const candidates = [waiting, ...byAmount.others];
  const passedOver = candidates.slice(0, candidates.indexOf(linked));
  for (const payout of passedOver) {
    await recordAwaitsOutcome(
      tx,
      row,
      payout,
      `a custody outflow that may be this payout's funding was booked by amount to payout ${linked.id} (claim link ${linked.claim_link_id}), next in line, rather than wait for this payout's create outcome`,
    );
  }
  return bookFunding(tx, deps, row, linked, token, funding, {
    payout: linked,
    others: candidates.filter((p) => p !== linked),
  });
}

/** The outflow has been final for the settlement's grace (on the indexer's clock). */
function finalForGrace(deps: ClaimLinkSettlementDeps, row: TransferRow): boolean {
  const waited = row.final_at ? deps.clock.now().getTime() - new Date(row.final_at).getTime() : 0;
  return waited >= deps.unmatchedGraceMs;
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

/**
 * A block's time is a whole second: a payout created within the second after it was still created
 * by the block. Candidates created later come after every candidate created by then.
 */
export const BY_AMOUNT_BLOCK_SECOND_MS = 1_000;

/**
 * How much later than the payout's last create attempt a funding's block time may be. The create
 * call blocks while its funding settles (about 90 s in the service's terms; our call times out
 * after 120 s): 15 minutes leaves room for a slow service and for the chain's clock. The last
 * attempt is bounded by the row's updated_at, which every attempt writes (countAttempt), so a
 * payout created days before a re-run is still matched to the re-run's funding; a write that is
 * not an attempt only widens the window. A payout stuck with an unknown outcome thus no longer
 * captures a custody outflow of a similar amount mined long after its last attempt.
 */
export const BY_AMOUNT_FUNDING_WINDOW_MS = 15 * 60_000;

/**
 * The payout's named funding left the chain before its pool was learnt: every row of that
 * transaction is orphaned (a reorg took it while it was pending, or before it was booked). The
 * service sends such a funding again under a new hash, which no answer names, so it is matched by
 * amount like a funding whose answer was lost, within its own window: mined after the funding it
 * replaces, and at most BY_AMOUNT_FUNDING_WINDOW_MS after our books saw that one orphaned (an
 * owner's withdrawal of a similar amount later is no resend; seed 8 of the simulator).
 */
function fundingLeftChain(row: TransferRow) {
  const blockTime = new Date(row.block_time).toISOString();
  const windowMs = `${BY_AMOUNT_FUNDING_WINDOW_MS} milliseconds`;
  return sql`exists (select 1 from chain_transfers o
                 where o.chain_id = ${row.chain_id}::bigint and o.tx_hash = lower(payouts.funding_tx_hash)
                   and o.state = 'orphaned' and o.block_time <= ${blockTime}::timestamptz
                   and o.orphaned_at + ${windowMs}::interval >= ${blockTime}::timestamptz)
    and not exists (select 1 from chain_transfers l
                    where l.chain_id = ${row.chain_id}::bigint and l.tx_hash = lower(payouts.funding_tx_hash)
                      and l.state <> 'orphaned')`;
}

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
 * of that store and token, created before the outflow (with `BY_AMOUNT_CLOCK_SLACK_MS`) and last
 * attempted at most `BY_AMOUNT_FUNDING_WINDOW_MS` before it, whose amount the outflow covers with
 * at most `maxFundingFeeByAmount` over. Of several, those created by the outflow's block time
 * first (a create call's funding is mined while the call waits, so a payout created after the
 * block fits only through the clock slack), then the one it exceeds by the least (the smallest
 * fee), then the oldest; the others follow in that order.
 */
async function fundedByAmount(
  tx: DbExecutor,
  row: TransferRow,
  custody: WatchedWallet,
  token: Token,
  value: bigint,
): Promise<ByAmount | undefined> {
  const blockTime = new Date(row.block_time).getTime();
  const latest = new Date(blockTime + BY_AMOUNT_CLOCK_SLACK_MS).toISOString();
  const earliestAttempt = new Date(blockTime - BY_AMOUNT_FUNDING_WINDOW_MS).toISOString();
  // Created after the block (beyond its whole second): a candidate only through the clock slack.
  const byBlock = new Date(blockTime + BY_AMOUNT_BLOCK_SECOND_MS).toISOString();
  const { rows } = await tx.execute<PayoutRow & { after_block: boolean }>(sql`
    select ${payoutColumns}, created_at > ${byBlock}::timestamptz as after_block from payouts
    where chain_id = ${Number(row.chain_id)} and token_address = ${token.address}
      and store_id in (${sql.join(
        custody.storeIds.map((s) => sql`${s}`),
        sql`, `,
      )})
      and pool_address is null and create_outcome <> 'failed' and created_at <= ${latest}::timestamptz
      and ((funding_tx_hash is null and updated_at >= ${earliestAttempt}::timestamptz)
           or (funding_tx_hash is not null and ${fundingLeftChain(row)}))
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
    .sort((a, b) =>
      a.payout.after_block !== b.payout.after_block
        ? a.payout.after_block
          ? 1
          : -1
        : a.excess !== b.excess
          ? a.excess < b.excess
            ? -1
            : 1
          : a.order - b.order,
    );
  const [best, ...others] = fits;
  return best ? { payout: best.payout, others: others.map((o) => o.payout) } : undefined;
}

/**
 * Books the funding `funding` (all its logs) of `payout` from one of its logs, `row`: rule 5's
 * fee, keyed by the first log, so each log books the same entry; the pool learnt on the first.
 */
async function bookFunding(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  payout: PayoutRow,
  token: Token,
  funding: FundingPool,
  byAmount: ByAmount | null,
): Promise<MatchDecision | 'unmatched'> {
  if (!payout.claim_link_id) return awaitCreateOutcome(tx, deps, row, payout);
  await resolveFinding(tx, FUNDING_AWAITS_OUTCOME, { type: 'payout', id: payout.id });
  const linkId = payout.claim_link_id;
  if (!payout.pool_address && !(await learnPool(tx, row, payout, linkId))) return 'unmatched';
  const base: ClaimLinkFactBase = {
    storeId: payout.store_id,
    claimLinkId: linkId,
    token,
    amount: payout.amount,
  };
  const [first, ...others] = funding.logs.map(transferFact);
  if (!first) return 'unmatched';
  const key = claimLinkFundingFeeKey(linkId, first);
  // Another log of this piece booked its entry already: the same entry, not computed again.
  let entryId = await postedEntryId(tx, key);
  if (entryId === null) {
    const before = await earlierPieces(tx, row, linkId, payout.store_id, token, key);
    const outcome = claimLinkFundingProven({ ...base, transfer: first, otherLogs: others, ...before });
    if (outcome.entry) entryId = (await postEntry(tx, outcome.entry, { accounts: deps.accounts })).id;
    for (const f of outcome.findings) await recordFinding(tx, f, payout.store_id);
    // The pieces together cover A: the remainder a short piece named is funded now.
    if (outcome.findings.every((f) => f.kind !== 'funding_mismatch'))
      await resolveFinding(tx, 'funding_mismatch', { type: 'claim_link', id: linkId });
  }
  const booked = entryId !== null;
  await allocateFundingPiece(
    tx,
    row,
    linkId,
    payout.store_id,
    first.logIndex === row.log_index ? entryId : null,
  );
  if (byAmount) await recordMatchedByAmount(tx, row, payout, linkId, token, funding, byAmount);
  await recordFunding(tx, payout.id, {
    poolAddress: row.to_address,
    txHash: row.tx_hash,
    blockTime: new Date(row.block_time),
  });
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

/**
 * The create call has not told us the link yet (in flight, or its outcome unknown): wait for it.
 * Past the grace, say so: the outflow waits (and custody's proof fails) until someone learns
 * the outcome, which only running the same create again does when it is unknown.
 */
async function awaitCreateOutcome(
  tx: DbExecutor,
  deps: ClaimLinkSettlementDeps,
  row: TransferRow,
  payout: PayoutRow,
): Promise<MatchDecision> {
  if (finalForGrace(deps, row)) {
    await recordAwaitsOutcome(
      tx,
      row,
      payout,
      "a custody outflow that may be this payout's funding waits for its create outcome",
    );
  }
  return { kind: 'deferred' };
}

/** `funding_awaits_create_outcome` on a payout whose create outcome is not known. */
async function recordAwaitsOutcome(
  tx: DbExecutor,
  row: TransferRow,
  payout: PayoutRow,
  what: string,
): Promise<void> {
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
        what,
        action: `run the same payouts create again (reference_id ${payout.reference_id}, same amount) to learn it`,
      },
    },
    payout.store_id,
  );
}

/**
 * Learns the funding's address as link `linkId`'s pool wallet. False when it is another link's
 * pool: refused, with its finding, and the funding is not booked.
 */
async function learnPool(
  tx: DbExecutor,
  row: TransferRow,
  payout: PayoutRow,
  linkId: string,
): Promise<boolean> {
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
      return false;
    }
  }
  return true;
}

/** The finding of a funding booked by amount, naming the other payouts it could have funded. */
async function recordMatchedByAmount(
  tx: DbExecutor,
  row: TransferRow,
  payout: PayoutRow,
  linkId: string,
  token: Token,
  funding: FundingPool,
  byAmount: ByAmount,
): Promise<void> {
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
