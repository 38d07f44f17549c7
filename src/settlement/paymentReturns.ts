import { type SQL, sql } from 'drizzle-orm';
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
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { chainTransferId } from '../ledger/rules/chainTransferFact.ts';
import { paymentReturned, unmatchedTransfer } from '../ledger/rules/chainTransferRules.ts';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';

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
  // is sent back and whose arrival went to suspense; the others only decide whether to wait.
  const { rows } = await tx.execute<{
    id: string;
    intent_id: string | null;
    intent_status: number | null;
    matched_as: string | null;
  }>(sql`
    select p.id::text, i.id as intent_id, i.status as intent_status, p.matched_as
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
  const candidate = rows.find(
    (r) => r.intent_id !== null && sentBack(r.intent_status) && inSuspense(r.matched_as),
  );
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

  const paidFact = transferFact(paid);
  // The return clears the suspense the arrival was booked to, in that store (a merchant wallet
  // may be shared by stores; the arrival went to the store of its intent).
  const arrivalStore = paid.store_id ?? storeId;
  const outcome = paymentReturned({
    storeId: arrivalStore,
    intentId,
    returned: transferFact(row),
    paid: paidFact,
    token,
  });
  if (outcome.entry) await postEntry(tx, outcome.entry, { accounts: deps.accounts });
  await resolveFinding(tx, 'unmatched_transfer_in', {
    type: 'chain_transfer',
    id: chainTransferId(paidFact),
  });
  await markApplied(tx, row.id, ['payment_returned'], intentId, arrivalStore);
  // The arrival now belongs to that intent: no other intent's proof may take it (proveIntentPayment).
  await tx.execute(sql`update chain_transfers set matched_ref = ${intentId} where id = ${paid.id}::bigint`);
  return { kind: 'applied' };
}

/** The transfer already booked as the return of this intent's payment (not orphaned), if any. */
function returnOf(intentId: SQL) {
  return sql`select 1 from chain_transfers r
    where r.matched_as = 'payment_returned' and r.matched_ref = ${intentId} and r.state <> 'orphaned'`;
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
