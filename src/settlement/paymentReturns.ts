import { type SQL, sql } from 'drizzle-orm';
import { allocate, allocatedTo } from '../chain/allocations.ts';
import {
  type MatchDecision,
  markApplied,
  type TransferRow,
  transferColumns,
  transferFact,
} from '../chain/transferRow.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { postEntry, reverseEntry } from '../ledger/postEntry.ts';
import { chainTransferId } from '../ledger/rules/chainTransferFact.ts';
import {
  paymentReturned,
  unmatchedTransfer,
  unmatchedTransferKey,
} from '../ledger/rules/chainTransferRules.ts';
import { provenInSuspense } from '../payments/provenPaymentSuspense.ts';
import { supersedeClassificationOfKey } from '../suspense/classifySuspense.ts';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import type { SettlementDeps } from './settlementDeps.ts';

/**
 * A final transfer out of a merchant wallet that sends an intent's payment back to its payer: the
 * service's SEND_BACK of an underpaid or KYT-rejected payment made directly to the merchant
 * wallet. The payment's arrival matched no confirmed intent and went to suspense with a finding
 * (rule 9); its return clears that suspense and resolves the finding, instead of being booked as
 * an owner transfer with a finding of its own.
 *
 * The pair: the same chain, token and amount, from the wallet the payment reached back to the
 * wallet it came from, where the payment is an intent's tx_hash and the intent is sent back
 * (SEND_BACK) or ended in a failure status. Each payment is returned at most once.
 *
 * Returns null when the transfer returns no payment (rule 9 applies), `deferred` when it may: the
 * payment's intent has not told us yet that it failed (a webhook or poll may be on its way, as for
 * a transfer in), the payment itself is not booked yet, or another worker just returned it (the
 * next pass looks again).
 */
interface Deps {
  config: Pick<Config, 'chains'>;
  accounts: AccountCache;
}

export async function applyPaymentReturn(
  tx: DbExecutor,
  deps: Deps,
  row: TransferRow,
  storeId: string,
  graceOver: boolean,
): Promise<MatchDecision | null> {
  if (BigInt(row.value) === 0n) return null;
  const token = deps.config.chains.token(Number(row.chain_id), row.token);
  if (!token) return null;
  // The payments it may mirror: into this wallet from the recipient, same token and amount,
  // earlier, not confirmed and not returned already. The one returned is the oldest whose intent
  // is sent back and whose arrival went to suspense, one seen at SEND_BACK first; the others only
  // decide whether to wait.
  const { rows } = await tx.execute<{
    id: string;
    intent_id: string | null;
    intent_status: number | null;
    matched_as: string | null;
    matched_ref: string | null;
    seen_send_back: boolean;
  }>(sql`
    select p.id::text, i.id as intent_id, i.status as intent_status, p.matched_as, p.matched_ref,
           coalesce(i.status = ${CheckoutStatus.SEND_BACK} or exists (
             select 1 from checkout_intent_status_history h
             where h.intent_id = i.id and h.to_status = ${CheckoutStatus.SEND_BACK}), false) as seen_send_back
    from chain_transfers p
    left join checkout_intents i on i.chain_id = p.chain_id
      and (lower(i.tx_hash) = p.tx_hash or lower(i.tx_hash_2) = p.tx_hash)
    where p.chain_id = ${row.chain_id}::bigint and p.to_address = ${row.from_address}
      and p.from_address = ${row.to_address} and p.token = ${row.token} and p.value = ${row.value}::numeric
      and p.state = 'final' and p.id <> ${row.id}::bigint
      and (p.block_number, p.log_index) < (${row.block_number}::bigint, ${row.log_index}::int)
      and (i.id is null
           or (i.status is distinct from ${CheckoutStatus.CONFIRMED} and not exists (${returnOf(sql`i.id`)})))
    order by p.block_number, p.log_index
    limit 50`);
  const sentBack = (status: number | null) =>
    status === CheckoutStatus.SEND_BACK || (status !== null && status < 0);
  const inSuspense = (matchedAs: string | null) =>
    matchedAs?.split(',').includes('transfer_in_unmatched') ?? false;
  // Nothing on the chain tells apart two payments of one payer and amount: an intent seen at
  // SEND_BACK (the service said it returns that one) goes before one that only failed.
  // A payment proven, then failed: rule 4 moved its proven money to suspense; the return clears it.
  const provenThenFailed = (r: (typeof rows)[number]) =>
    r.matched_ref === r.intent_id && (r.matched_as?.split(',').includes('payment_proof') ?? false);
  const returnable = rows.filter(
    (r) =>
      r.intent_id !== null && sentBack(r.intent_status) && (inSuspense(r.matched_as) || provenThenFailed(r)),
  );
  const candidate = returnable.find((r) => r.seen_send_back) ?? returnable[0];
  if (!candidate?.intent_id) {
    // A sent-back payment not booked yet will be (rule 9, at once for a failed intent): wait for
    // it. A payment whose intent is unknown or not settled may still turn out sent back: wait
    // the grace, as a transfer in does, then rule 9.
    if (rows.some((r) => r.intent_id !== null && sentBack(r.intent_status) && r.matched_as === null))
      return { kind: 'deferred' };
    if (!graceOver && rows.some((r) => r.intent_id === null || !sentBack(r.intent_status)))
      return { kind: 'deferred' };
    return null;
  }
  // Two workers may hold two transfers that could both return this payment: the intent's lock
  // (the matcher's order: transfer row, then intent) makes them take turns, and the second,
  // reading after the first committed, finds the payment returned already.
  const intentId = candidate.intent_id;
  await tx.execute(sql`select 1 from checkout_intents where id = ${intentId} for update`);
  const taken = await tx.execute(sql`${returnOf(sql`${intentId}`)}`);
  if (taken.rows.length > 0) return { kind: 'deferred' };
  const paid = (
    await tx.execute<TransferRow>(
      sql`select ${transferColumns} from chain_transfers where id = ${candidate.id}::bigint`,
    )
  ).rows[0];
  if (!paid) return { kind: 'deferred' };

  // A proven arrival is returned only out of what rule 4 holds of it in suspense.
  if (provenThenFailed(candidate) && !(await provenSuspenseCovers(tx, intentId, BigInt(row.value))))
    return null;
  // The return clears the suspense the arrival was booked to, in that store (a merchant wallet
  // may be shared by stores; the arrival went to the store of its intent).
  const arrivalStore = paid.store_id ?? storeId;
  await bookReturn(tx, deps, intentId, paid, row, arrivalStore, token);
  await markApplied(tx, row.id, ['payment_returned'], intentId, arrivalStore);
  // The arrival now belongs to that intent: no other intent's proof may take it (proveIntentPayment).
  await tx.execute(sql`update chain_transfers set matched_ref = ${intentId} where id = ${paid.id}::bigint`);
  return { kind: 'applied' };
}

/**
 * The pairs that became recognisable too late: a direct payment and its return, both booked to
 * rule 9 (the payment to suspense, the return as an owner withdrawal: `transfer_out_unmatched`)
 * because the intent that names the payment was not known as sent back when they were settled (a
 * webhook delayed, a poll late, past the grace). Once the intent is known as sent back (SEND_BACK)
 * or failed, each such pair is re-matched as applyPaymentReturn would have matched it: the
 * return's rule-9 entry is reversed (dated as it was), the return is booked as
 * `chain.payment_returned` (clearing the arrival's suspense, in the arrival's store), both
 * unmatched findings resolve, and the rows say so (the return `payment_returned`, the arrival
 * owned by the intent). Returns how many pairs it re-matched.
 *
 * Set-based: one statement finds the candidates, from the intents sent back or failed that name a
 * payment (a partial index) whose arrival is in suspense and no proof or return took it (a return
 * gives the arrival its intent as matched_ref), with an owner transfer out of the wallet it
 * reached back to its payer, same token and amount, later (another partial index; both in
 * migration 0013). Then one transaction per intent, which locks the intent first (FOR UPDATE: the
 * intent side's order) and the two transfer rows with SKIP LOCKED (never waiting on a transfer
 * while holding the intent, so no cycle with a matcher that holds a transfer and waits for the
 * intent), and checks everything again under those locks: any number of settlement workers may
 * run it at once, and a pair is re-matched once (one return per intent, as applyPaymentReturn).
 */
export async function rematchPaymentReturns(
  deps: Pick<SettlementDeps, 'db' | 'config' | 'accounts'>,
  chainId: number,
  merchants: readonly string[],
  options: { limit?: number } = {},
): Promise<number> {
  if (merchants.length === 0) return 0;
  const wallets = sql.join(
    merchants.map((m) => sql`${m.toLowerCase()}`),
    sql`, `,
  );
  // The intents first (materialized), then each one's transfers by hash (OFFSET 0 keeps that a
  // lookup per intent): the planner cannot know how few failed intents name a payment, and left to
  // itself would read chain_transfers whole. Its estimate is still far above the truth, so JIT,
  // which would cost more than the query, is off for it.
  const rows = await deps.db.transaction(async (tx) => {
    await tx.execute(sql`set local jit = off`);
    const found = await tx.execute<{ intent_id: string }>(sql`
      with sent_back as materialized (
        select i.id, i.chain_id, array_remove(array[lower(i.tx_hash), lower(i.tx_hash_2)], null) as hashes
        from checkout_intents i
        -- SEND_BACK (5) or a failure, with a payment: checkout_intents_sent_back_paid_idx's predicate.
        where i.chain_id = ${chainId} and (i.status = 5 or i.status < 0)
          and (i.tx_hash is not null or i.tx_hash_2 is not null))
      select s.id as intent_id from sent_back s
      where exists (
        select 1 from (
          select * from chain_transfers t
          where t.chain_id = s.chain_id and t.tx_hash = any(s.hashes)
          offset 0) p
        where ${returnableArrival(sql`p`, sql`s.id`)} and p.to_address in (${wallets})
          and exists (${laterOwnerTransferOut(sql`p`)}))
      order by s.id
      limit ${options.limit ?? 100}`);
    return found.rows;
  });
  let rematched = 0;
  for (const { intent_id } of rows) {
    if (await deps.db.transaction((tx) => rematchIntent(tx, deps, intent_id, wallets))) rematched++;
  }
  return rematched;
}

/** `p` is final, booked to suspense by rule 9, and no proof or return has taken it. */
function inSuspenseUnclaimed(p: SQL) {
  return sql`${p}.state = 'final' and ${p}.matched_ref is null
    and ${p}.matched_as like '%transfer_in_unmatched%' and ${p}.matched_as not like '%payment%'`;
}

/**
 * `p` may be the payment intent `intentId` sent back: in rule-9 suspense, unclaimed; or proven for
 * that intent (rule 2) whose proven money rule 4 moved to suspense when it failed, not returned yet.
 */
function returnableArrival(p: SQL, intentId: SQL) {
  return sql`((${inSuspenseUnclaimed(p)})
    or (${p}.state = 'final' and ${p}.matched_ref = ${intentId} and ${p}.matched_as like '%payment_proof%'
        and exists (select 1 from ledger_entries e
                    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId}
                      and e.kind = 'checkout.proven_reversed'
                      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id))))`;
}

/**
 * Whether rule 4's suspense of the intent (its live `checkout.proven_reversed` entries, less what
 * returns cleared of it already) holds at least `amount`.
 */
async function provenSuspenseCovers(tx: DbExecutor, intentId: string, amount: bigint): Promise<boolean> {
  const held = (await provenInSuspense(tx, intentId)) ?? 0n;
  const returned = await allocatedTo(tx, { type: 'checkout_intent', id: intentId }, ['return']);
  return held - returned >= amount;
}

/**
 * The return's entry (debit suspense, credit the wallet: chain.payment_returned) in the arrival's
 * store, and what it clears: the arrival's rule-9 suspense (a person's classification of it goes
 * first, its `unmatched_transfer_in` resolves), or, for an arrival proven and then failed, rule 4's
 * suspense (`proven_then_failed` resolves: the money went back). Allocated to the intent
 * (`return`, the sending side).
 */
async function bookReturn(
  tx: DbExecutor,
  deps: Pick<Deps, 'accounts'>,
  intentId: string,
  paid: TransferRow,
  returned: TransferRow,
  arrivalStore: string,
  token: Token,
): Promise<void> {
  const paidFact = transferFact(paid);
  const outcome = paymentReturned({
    storeId: arrivalStore,
    intentId,
    returned: transferFact(returned),
    paid: paidFact,
    token,
  });
  const proven = isProven(paid);
  if (!proven) {
    await supersedeClassificationOfKey(
      tx,
      unmatchedTransferKey(paidFact, 'in'),
      `payment return: intent ${intentId} sent the payment back`,
    );
  }
  const posted = outcome.entry ? await postEntry(tx, outcome.entry, { accounts: deps.accounts }) : null;
  if (posted?.created) {
    await allocate(tx, {
      transferId: returned.id,
      side: 'out',
      obligation: { type: 'checkout_intent', id: intentId },
      purpose: 'return',
      amount: BigInt(returned.value),
      rule: 'rule 9',
      entryId: posted.id,
      storeId: arrivalStore,
    });
  }
  if (proven) await resolveFinding(tx, 'proven_then_failed', { type: 'checkout_intent', id: intentId });
  else
    await resolveFinding(tx, 'unmatched_transfer_in', {
      type: 'chain_transfer',
      id: chainTransferId(paidFact),
    });
}

/**
 * The transfers booked as owner withdrawals (rule 9 out, nothing else) that mirror payment `p`:
 * from the wallet it reached back to its sender, same token and amount, after it on chain; the
 * earliest first. Served by chain_transfers_unmatched_out_idx.
 */
function laterOwnerTransferOut(p: SQL) {
  return sql`select r.id from chain_transfers r
    where r.chain_id = ${p}.chain_id and r.from_address = ${p}.to_address and r.to_address = ${p}.from_address
      and r.state = 'final' and r.matched_as like '%transfer_out_unmatched%'
      and r.token = ${p}.token and r.value = ${p}.value
      and (r.block_number, r.log_index) > (${p}.block_number, ${p}.log_index)
    order by r.block_number, r.log_index`;
}

/** One intent's re-match, in its own transaction; whether it re-matched a pair. */
async function rematchIntent(
  tx: DbExecutor,
  deps: Pick<SettlementDeps, 'config' | 'accounts'>,
  intentId: string,
  wallets: SQL,
): Promise<boolean> {
  // The intent first, waiting for it (the intent side's order); its status and hashes as committed.
  const intent = (
    await tx.execute<{ status: number | null; chain_id: string; hashes: string[] }>(sql`
      select status, chain_id::text,
             array_remove(array[lower(tx_hash), lower(tx_hash_2)], null) as hashes
      from checkout_intents where id = ${intentId} for update`)
  ).rows[0];
  if (!intent || !isSentBack(intent.status) || intent.hashes.length === 0) return false;
  // Its arrivals in suspense, then each one's earliest owner transfer back: rows another worker
  // holds are skipped (it is matching them now; a later pass looks again).
  const arrivals = (
    await tx.execute<TransferRow>(sql`
      select ${transferColumns} from chain_transfers p
      where p.chain_id = ${intent.chain_id}::bigint and p.tx_hash = any(${sql.param(intent.hashes)}::text[])
        and ${returnableArrival(sql`p`, sql`${intentId}`)} and p.to_address in (${wallets})
      order by p.block_number, p.log_index
      for update skip locked`)
  ).rows;
  for (const paid of arrivals) {
    const returned = (
      await tx.execute<TransferRow>(sql`
        select ${transferColumns} from chain_transfers r
        where r.chain_id = ${paid.chain_id}::bigint and r.from_address = ${paid.to_address}
          and r.to_address = ${paid.from_address} and r.state = 'final' and r.matched_as like '%transfer_out_unmatched%'
          and r.token = ${paid.token} and r.value = ${paid.value}::numeric
          and (r.block_number, r.log_index) > (${paid.block_number}::bigint, ${paid.log_index}::int)
        order by r.block_number, r.log_index
        limit 1
        for update skip locked`)
    ).rows[0];
    if (!returned) continue;
    // One return per intent: another of its payments may have been returned already.
    if ((await tx.execute(sql`${returnOf(sql`${intentId}`)}`)).rows.length > 0) return false;
    if (await rebookReturn(tx, deps, intentId, paid, returned)) return true;
  }
  return false;
}

/**
 * The re-match itself, under the locks: the return's owner transfer (rule 9 out) is reversed, the
 * return is booked as chain.payment_returned in the arrival's store (as applyPaymentReturn books
 * it), the two unmatched findings resolve, and the rows name the intent. False (nothing written)
 * for rows rule 9 could not have booked: a token outside the registry, no store.
 */
async function rebookReturn(
  tx: DbExecutor,
  deps: Pick<SettlementDeps, 'config' | 'accounts'>,
  intentId: string,
  paid: TransferRow,
  returned: TransferRow,
): Promise<boolean> {
  const token = deps.config.chains.token(Number(returned.chain_id), returned.token);
  // The return clears the suspense the arrival was booked to, in that store (a merchant wallet may
  // be shared by stores; the arrival went to the store of its intent, or the wallet's first).
  const arrivalStore = paid.store_id ?? returned.store_id;
  if (!token || !arrivalStore) return false;
  const returnedFact = transferFact(returned);
  const ownerTransfer = (
    await tx.execute<{ id: string }>(sql`
      select id::text from ledger_entries where idempotency_key = ${unmatchedTransferKey(returnedFact, 'out')}`)
  ).rows[0];
  if (isProven(paid) && !(await provenSuspenseCovers(tx, intentId, BigInt(returned.value)))) return false;
  if (ownerTransfer) {
    await reverseEntry(
      tx,
      BigInt(ownerTransfer.id),
      `the payment of intent ${intentId}, sent back: not an owner transfer`,
    );
  }
  await bookReturn(tx, deps, intentId, paid, returned, arrivalStore, token);
  await resolveFinding(tx, 'unmatched_transfer_out', {
    type: 'chain_transfer',
    id: chainTransferId(returnedFact),
  });
  await markApplied(tx, returned.id, ['payment_returned'], intentId, arrivalStore, {
    remove: ['transfer_out_unmatched'],
  });
  await tx.execute(sql`update chain_transfers set matched_ref = ${intentId} where id = ${paid.id}::bigint`);
  return true;
}

/** An arrival rule 2 proved (its intent failed later). */
function isProven(paid: TransferRow): boolean {
  return paid.matched_as?.split(',').includes('payment_proof') ?? false;
}

/** A status that says the service sends the payment back, or kept it for a failed intent. */
function isSentBack(status: number | null): boolean {
  return status === CheckoutStatus.SEND_BACK || (status !== null && status < 0);
}

/**
 * The transfer already booked as the return of this intent's payment (not orphaned), if any. A
 * return into a wallet we also watch carries both its sides in matched_as
 * (`transfer_in_unmatched,payment_returned`), hence LIKE, not equality.
 */
function returnOf(intentId: SQL) {
  return sql`select 1 from chain_transfers r
    where r.matched_as like '%payment_returned%' and r.matched_ref = ${intentId} and r.state <> 'orphaned'`;
}

/**
 * Rule 3 for a return (called when its inclusion was orphaned and its entry reversed): the money
 * is in suspense again, so the arrival's `unmatched_transfer_in` finding, resolved by the return,
 * is open again until a return is booked anew.
 */
export async function reopenReturnedPayment(
  tx: DbExecutor,
  deps: Pick<Deps, 'config'>,
  row: TransferRow,
): Promise<void> {
  const token = deps.config.chains.token(Number(row.chain_id), row.token);
  if (!token || !row.matched_ref || !row.store_id) return;
  const paid = (
    await tx.execute<TransferRow>(sql`
      select ${transferColumns} from chain_transfers p
      where p.chain_id = ${row.chain_id}::bigint and p.to_address = ${row.from_address}
        and p.from_address = ${row.to_address} and p.token = ${row.token} and p.value = ${row.value}::numeric
        and p.state = 'final' and p.matched_as like '%transfer_in_unmatched%'
        and exists (select 1 from checkout_intents i where i.id = ${row.matched_ref} and i.chain_id = p.chain_id
                    and (lower(i.tx_hash) = p.tx_hash or lower(i.tx_hash_2) = p.tx_hash))
      order by p.block_number, p.log_index limit 1`)
  ).rows[0];
  if (!paid) return;
  await tx.execute(sql`update chain_transfers set matched_ref = null where id = ${paid.id}::bigint`);
  const arrival = unmatchedTransfer({
    storeId: row.store_id,
    transfer: transferFact(paid),
    token,
    wallet: { address: row.from_address as `0x${string}`, role: 'merchant' },
  });
  for (const f of arrival.findings) await recordFinding(tx, f, row.store_id);
}
