import { sql } from 'drizzle-orm';
import { allocate } from '../chain/allocations.ts';
import {
  decidedSides,
  finishRow,
  type MatchDecision,
  markApplied,
  type TransferRow,
  transferColumns,
  transferFact,
} from '../chain/transferRow.ts';
import { type WatchedWallet, watchedPool, watchedWallets } from '../chain/watchedWallets.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { unmatchedTransfer, type WatchedWalletRole } from '../ledger/rules/chainTransferRules.ts';
import { type PaymentProofDeps, proveIntentPayment } from '../payments/proveIntentPayment.ts';
import { TOP_UP_CLOCK_SLACK_MS } from '../payments/topUpLogs.ts';
import { applyCustodyOutflow } from './claimLinkFunding.ts';
import { applyClaimLinkTransfer } from './claimLinkPoolOutflow.ts';
import { applyPaymentReturn, rematchPaymentReturns } from './paymentReturns.ts';
import type { SettlementDeps } from './settlementDeps.ts';
import { unwindOrphaned } from './unwindOrphaned.ts';

/**
 * Turns what the indexer stored into ledger entries: every final transfer is matched once to what
 * it pays (an intent's proof, a claim link's funding, claim or refund, a payment sent back, or
 * nothing: rule 9), and
 * every orphaned transfer that was booked is unwound (rule 3). Each row is its own transaction,
 * claimed with SKIP LOCKED, so any number of workers can run this at once.
 *
 * A transfer into a merchant wallet whose intent we do not know as confirmed yet waits for
 * `unmatchedGraceMs` (the webhook or poll may still be on its way) before it goes to suspense; a
 * later confirmation moves it from suspense to the intent (proveIntentPayment).
 *
 * A payment sent back and its return that both went to rule 9 before the intent was known as sent
 * back are re-matched once it is (rematchPaymentReturns): the owner transfer is reversed and the
 * return clears the suspense.
 *
 * Rows are matched in block and log order, and a funding that teaches a new pool wallet adds it
 * to this batch's watched set before the next row: a pool funded and refunded (or claimed) within
 * one batch, as after downtime, is matched as if each transfer had come in a batch of its own.
 */

export interface ApplyOutcome {
  /** Rows booked (or decided to book nothing), and payment returns re-matched after rule 9. */
  applied: number;
  deferred: number;
  unwound: number;
}

export async function settleTransfers(
  deps: SettlementDeps,
  chainId: number,
  options: { limit?: number } = {},
): Promise<ApplyOutcome> {
  const limit = options.limit ?? 1000;
  const wallets = await watchedWallets(deps.db, deps.config, chainId);
  // Pools are learnt while the batch runs (learntPool, below): this map grows, the list does not.
  const byAddress = new Map(wallets.map((w) => [w.address, w]));
  const outcome: ApplyOutcome = { applied: 0, deferred: 0, unwound: 0 };

  const orphaned = await deps.db.execute<{ id: string }>(sql`
    select id::text from chain_transfers
    where chain_id = ${chainId} and state = 'orphaned' and matched_as is not null and unwound_at is null
    order by block_number, log_index limit ${limit}`);
  for (const { id } of orphaned.rows) {
    if (await deps.db.transaction((tx) => unwindOrphaned(tx, deps, id))) outcome.unwound++;
  }

  // A transfer into a merchant wallet waits for its intent (see above): only those whose grace
  // is over or whose intent has settled are worth a transaction now. Not one out of a pool: the
  // pool's side never waits, and deciding it late would let the pool's later transfers (a refund
  // after a claim into our own merchant wallet) be matched before it.
  const merchants = wallets.filter((w) => w.role === 'merchant').map((w) => sql`${w.address}`);
  const graceCutoff = new Date(deps.clock.now().getTime() - deps.unmatchedGraceMs).toISOString();
  const final = await deps.db.execute<{ id: string }>(sql`
    select t.id::text from chain_transfers t
    where t.chain_id = ${chainId} and t.state = 'final' and t.applied_at is null
      and (${merchants.length === 0 ? sql`true` : sql`t.to_address not in (${sql.join(merchants, sql`, `)})`}
           or t.final_at < ${graceCutoff}::timestamptz
           or exists (select 1 from chain_watched_wallets w where w.chain_id = t.chain_id and w.address = t.from_address)
           or exists (select 1 from checkout_intents i
                      where i.chain_id = t.chain_id and (i.status = 20 or i.status < 0)
                        and (lower(i.tx_hash_2) = t.tx_hash or lower(i.tx_hash) = t.tx_hash)))
    order by t.block_number, t.log_index limit ${limit}`);
  for (const { id } of final.rows) {
    const decision = await deps.db.transaction(async (tx) => {
      const row = (
        await tx.execute<TransferRow>(sql`
          select ${transferColumns} from chain_transfers
          where id = ${id}::bigint and state = 'final' and applied_at is null for update skip locked`)
      ).rows[0];
      if (!row) return null;
      return applyOne(tx, deps, row, byAddress);
    });
    if (decision?.kind === 'applied') outcome.applied++;
    else if (decision?.kind === 'deferred') outcome.deferred++;
    // Read after the commit, and only after a funding: batches that fund no pool pay nothing.
    if (decision?.learntPool) {
      const pool = await watchedPool(deps.db, chainId, decision.learntPool);
      if (pool) byAddress.set(pool.address, pool);
    }
  }
  // A payment sent back whose intent we learnt as sent back only after both it and its return went
  // to rule 9 (suspense, owner transfer): the pair is re-matched now, each re-match counted applied.
  const merchantAddresses = wallets.filter((w) => w.role === 'merchant').map((w) => w.address);
  outcome.applied += await rematchPaymentReturns(deps, chainId, merchantAddresses, { limit });
  return outcome;
}

/** A decision, and the pool wallet a funding may have made watched (its address, lowercase). */
type RowDecision = MatchDecision & { learntPool?: string };

/**
 * One final row, as two facts: the receiver's inflow and the sender's outflow, each explained by
 * its own rule (or sent to rule 9) and recorded on its own (markApplied), whichever wallets of
 * ours are at either end. A rule that explains one side never decides the other: a store's
 * merchant wallet paying another store's intent is that intent's proof and the first store's owner
 * transfer. The row is finished (applied_at) once both are decided; a side that must wait (the
 * grace, a create outcome) leaves the row for a later pass with what was decided already recorded,
 * so it is never decided twice.
 */
async function applyOne(
  tx: DbExecutor,
  deps: SettlementDeps,
  row: TransferRow,
  wallets: Map<string, WatchedWallet>,
): Promise<RowDecision> {
  let from = wallets.get(row.from_address);
  const to = wallets.get(row.to_address);
  const graceOver =
    row.final_at !== null &&
    deps.clock.now().getTime() - new Date(row.final_at).getTime() >= deps.unmatchedGraceMs;
  const decided = decidedSides(row.matched_as);

  // From an address this batch does not watch into custody: a pool (its refund), or a pool being
  // learnt (see unknownSender). Rare (owner deposits), so the lookups cost the common path nothing.
  if (!from && to?.role === 'custody') {
    const sender = await unknownSender(tx, row, wallets);
    if (sender === 'funding_pending') return { kind: 'deferred' };
    from = sender;
  }
  // Money leaving a claim-link pool: its claim, its refund (which is custody's inflow too), or the
  // service's own fee settlement. Never waits, so it goes first.
  if (from?.role === 'pool' && !decided.outflow) {
    const pooled = await applyClaimLinkTransfer(tx, deps, row, from);
    if (pooled.kind === 'deferred') return pooled;
    decided.outflow = true;
    decided.inflow ||= pooled.inflowToo === true;
  }

  // The receiver's inflow: a merchant wallet's waits for the intent that may explain it.
  if (!decided.inflow && (to?.role === 'merchant' || to?.role === 'custody')) {
    const inflow = await matchInflow(tx, deps, row, to, graceOver);
    if (inflow.kind === 'deferred') return inflow;
    if (inflow.kind === 'unmatched') {
      // Rule 9 for money from an address we do not watch into a merchant wallet: unless it comes
      // out of a pool (a claim into our own wallet) whose funding is still being matched, or that
      // another run learnt since this batch read its wallets. Booked as an inflow alone, its
      // pool's side would never be decided: the claim lost, the link's later refund matched as
      // a cancel. Only here, past the grace, so a payment matched by rule 2 pays no lookup.
      if (!from && to.role === 'merchant') {
        const sender = await unknownSender(tx, row, wallets);
        if (sender === 'funding_pending') return { kind: 'deferred' };
        if (sender && !decided.outflow) {
          from = sender;
          const pooled = await applyClaimLinkTransfer(tx, deps, row, sender);
          if (pooled.kind === 'deferred') return pooled;
          decided.outflow = true;
          decided.inflow ||= pooled.inflowToo === true;
        }
      }
      if (!decided.inflow) await bookUnmatched(tx, deps, row, to, row.to_address, inflow.store);
    }
  }

  // The sender's outflow: a custody wallet's may fund a claim link, a merchant wallet's may send
  // a payment back; else rule 9.
  let learntPool: string | undefined;
  if (!decided.outflow && (from?.role === 'merchant' || from?.role === 'custody')) {
    let explained = false;
    if (from.role === 'custody') {
      const funding = await applyCustodyOutflow(tx, deps, row, from);
      if (funding !== 'unmatched') {
        if (funding.kind === 'deferred') return funding;
        explained = true;
        // An applied funding inserted its pool into chain_watched_wallets (unless it was there already).
        if (!wallets.has(row.to_address)) learntPool = row.to_address;
      }
    }
    const merchantStore = from.role === 'merchant' ? from.storeIds[0] : undefined;
    if (!explained && merchantStore) {
      const returned = await applyPaymentReturn(tx, deps, row, merchantStore, graceOver);
      if (returned?.kind === 'deferred') return returned;
      explained = returned !== null;
    }
    if (!explained) await bookUnmatched(tx, deps, row, from, row.from_address, from.storeIds[0]);
  }
  await finishRow(tx, row.id);
  return learntPool ? { kind: 'applied', learntPool } : { kind: 'applied' };
}

/**
 * The inflow of a merchant or custody wallet: into a merchant wallet, the proof of the intents its
 * transaction pays (rule 2), or after the grace unmatched (rule 9, with the store it is booked
 * to); into custody, unmatched at once (a pool's refund is decided with the pool's outflow).
 * Deferred while the intent may still explain it.
 */
async function matchInflow(
  tx: DbExecutor,
  deps: SettlementDeps,
  row: TransferRow,
  to: WatchedWallet,
  graceOver: boolean,
): Promise<MatchDecision | { kind: 'unmatched'; store: string | undefined }> {
  // The store of an intent this transaction pays: in a merchant wallet shared by stores, what
  // no rule books (a failed intent's payment kept) is still that store's, not the first one's.
  let intentStore: string | undefined;
  if (to.role === 'merchant') {
    // Every intent this transaction pays: one transaction may pay several (a batch payment).
    const intents = (
      await tx.execute<{ id: string; status: number | null; store_id: string }>(sql`
        select id, status, store_id from checkout_intents
        where chain_id = ${Number(row.chain_id)} and (lower(tx_hash_2) = ${row.tx_hash} or lower(tx_hash) = ${row.tx_hash})
        order by id collate "C" for update`)
    ).rows;
    intentStore = intents.find((i) => to.storeIds.includes(i.store_id))?.store_id;
    const confirmed = intents.filter((i) => i.status === 20);
    let matched = false;
    for (const intent of confirmed) {
      const proof = await proveIntentPayment(tx, proofDeps(deps), intent.id);
      // Rule 2's findings are about the intent: its own store's (not necessarily the wallet's).
      for (const f of proof.findings) await recordFinding(tx, f, intent.store_id);
      // A payment split over several logs matches them all at once, this row among them.
      if (proof.matchedRowIds.includes(row.id)) matched = true;
    }
    if (confirmed.length > 0) {
      // Matched: booked by rule 2 (at the chain's value, with a finding, when it is not N).
      if (matched) return { kind: 'applied' };
      // A log of their transaction that proved none of them (the wallet paid twice in one
      // transaction, or a log another matcher holds is the proof): after the grace, rule 9.
      if (!graceOver) return { kind: 'deferred' };
    } else {
      const terminalFailure = intents.some((i) => i.status !== null && i.status < 0);
      if (!terminalFailure && !graceOver) return { kind: 'deferred' };
      // No intent names its transaction: before rule 9, it may be the top-up of a short payment.
      if (intents.length === 0 && (await proveTopUp(tx, deps, row, to))) return { kind: 'applied' };
    }
  }
  return { kind: 'unmatched', store: intentStore ?? to.storeIds[0] };
}

function proofDeps(deps: SettlementDeps): PaymentProofDeps {
  return {
    chains: deps.config.chains,
    stores: deps.config.stores,
    accounts: deps.accounts,
    graceMs: deps.unmatchedGraceMs,
  };
}

/**
 * A transfer no intent names, into a merchant wallet, may complete a confirmed intent of that
 * wallet and token whose named payment was short (docs/accounting.md, rule 2: a top-up): each
 * such intent whose window holds the transfer's block time is locked (the matcher's order:
 * transfer row, then intent) and offered the proof; whether one took this row. Runs only on the
 * way to rule 9, so a payment its intent names pays nothing for it.
 */
async function proveTopUp(
  tx: DbExecutor,
  deps: SettlementDeps,
  row: TransferRow,
  to: WatchedWallet,
): Promise<boolean> {
  if (BigInt(row.value) === 0n) return false;
  const stores = sql.join(
    to.storeIds.map((s) => sql`${s}`),
    sql`, `,
  );
  const slack = `${TOP_UP_CLOCK_SLACK_MS} milliseconds`;
  const grace = `${deps.unmatchedGraceMs} milliseconds`;
  const { rows } = await tx.execute<{ id: string; store_id: string }>(sql`
    select id, store_id from checkout_intents
    where chain_id = ${Number(row.chain_id)} and status = 20 and lower(tx_to) = ${row.to_address}
      and lower(coin_contract) = ${row.token} and store_id in (${stores})
      and ${new Date(row.block_time).toISOString()}::timestamptz between tracked_at - ${slack}::interval
          and coalesce(confirmed_at, now()) + ${grace}::interval
      -- Not one its named transaction proved at N already (one lookup by hash each); on the
      -- chain now: an orphaned inclusion's match was reversed with it (rule 3).
      and not exists (select 1 from chain_transfers p
                      where p.chain_id = checkout_intents.chain_id and p.state = 'final'
                        and p.tx_hash = lower(coalesce(checkout_intents.tx_hash_2, checkout_intents.tx_hash))
                        and p.matched_ref = checkout_intents.id and p.matched_as like '%payment_proof%'
                        and p.matched_as not like '%payment_mismatch%')
    order by tracked_at, id collate "C"
    limit 10
    for update`);
  for (const intent of rows) {
    const proof = await proveIntentPayment(tx, proofDeps(deps), intent.id);
    for (const f of proof.findings) await recordFinding(tx, f, intent.store_id);
    if (proof.matchedRowIds.includes(row.id)) return true;
  }
  return false;
}

/**
 * The sender of a row that this batch does not watch: a pool another run learnt after this batch
 * read its wallets, or 'funding_pending' while one of our custody wallets' final transfers to it
 * is still undecided (a funding that may make it a pool, waiting for its create outcome: the row
 * waits with it, so the pool's side is decided as the pool's), else nobody we know.
 */
async function unknownSender(
  tx: DbExecutor,
  row: TransferRow,
  wallets: Map<string, WatchedWallet>,
): Promise<WatchedWallet | 'funding_pending' | undefined> {
  const pool = await watchedPool(tx, Number(row.chain_id), row.from_address);
  if (pool) {
    wallets.set(pool.address, pool);
    return pool;
  }
  const custody = [...wallets.values()].filter((w) => w.role === 'custody').map((w) => sql`${w.address}`);
  if (custody.length === 0) return undefined;
  const { rows } = await tx.execute(sql`
    select 1 from chain_transfers
    where chain_id = ${row.chain_id} and to_address = ${row.from_address}
      and from_address in (${sql.join(custody, sql`, `)})
      and state = 'final' and applied_at is null and id <> ${row.id}
    limit 1`);
  return rows.length > 0 ? 'funding_pending' : undefined;
}

/** Rule 9 for one side of a row: the wallet's own store, a finding, and the side recorded. */
async function bookUnmatched(
  tx: DbExecutor,
  deps: SettlementDeps,
  row: TransferRow,
  wallet: WatchedWallet,
  address: string,
  store: string | undefined,
): Promise<void> {
  if (!store) return;
  const result = unmatchedTransfer({
    storeId: store,
    transfer: transferFact(row),
    token: deps.config.chains.token(Number(row.chain_id), row.token) ?? null,
    wallet: { address: address as `0x${string}`, role: wallet.role as WatchedWalletRole },
  });
  const booked: string[] = [];
  if (result.entry) {
    const posted = await postEntry(tx, result.entry, { accounts: deps.accounts });
    const inflow = result.entry.kind === 'chain.transfer_in_unmatched';
    booked.push(inflow ? 'transfer_in_unmatched' : 'transfer_out_unmatched');
    // What nothing explains is allocated too: money in waits in suspense, money out is the owner's
    // (once, with the entry: a replayed key found the allocation made with it).
    if (posted.created)
      await allocate(tx, {
        transferId: row.id,
        side: inflow ? 'in' : 'out',
        obligation: inflow ? { type: 'suspense', id: row.id } : { type: 'owner', id: store },
        purpose: 'unmatched',
        amount: BigInt(row.value),
        rule: 'rule 9',
        entryId: posted.id,
        storeId: store,
      });
  }
  for (const f of result.findings) await recordFinding(tx, f, store);
  await markApplied(tx, row.id, booked, null, store);
}
