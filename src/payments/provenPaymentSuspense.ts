import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import { reverseEntry } from '../ledger/postEntry.ts';
import { checkoutConfirmedKey } from '../ledger/rules/checkoutRules.ts';

/**
 * A confirmed intent whose payment rule 2 proved, then reported failed (rule 4), then confirmed
 * again: docs/accounting.md, rule 4. Rule 4 moves the proven money from in_transit to suspense
 * (`checkout.proven_reversed`, built by checkoutTerminalFailure); a later rule-1 revision brings it
 * back to the sale by reversing that entry.
 */

/**
 * The intent's proven money still in the merchant wallet and not yet in suspense, per token: what
 * its live `chain.payment_proven` entries credited to in_transit, less what its live
 * `checkout.proven_reversed` entries debited back (none, unless an earlier revision's suspense was
 * never returned). Read on rule 4's rare path only, under the intent's row lock.
 */
export async function provenInWallet(
  tx: DbExecutor,
  intentId: string,
): Promise<Array<{ token: Token; amount: bigint }>> {
  const { rows } = await tx.execute<{
    chain_id: string;
    token: string;
    symbol: string;
    decimals: number;
    amount: string;
  }>(sql`
    select a.chain_id::text, a.token, a.symbol, a.decimals, (-sum(p.amount))::text as amount
    from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId}
      and e.kind in ('chain.payment_proven', 'checkout.proven_reversed')
      and a.code like 'assets:in\\_transit:%'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    group by a.chain_id, a.token, a.symbol, a.decimals
    having sum(p.amount) < 0
    order by a.chain_id, a.token`);
  return rows.map((r) => ({
    token: {
      chainId: Number(r.chain_id),
      address: r.token as `0x${string}`,
      symbol: r.symbol,
      decimals: r.decimals,
    },
    amount: BigInt(r.amount),
  }));
}

/**
 * What the chain proved of the intent's payment that rule 4 put in suspense: the in_transit debits
 * of its live `checkout.proven_reversed` entries; null when there are none. A confirmation after
 * the failure gets no new proof of that money (its logs are matched already), so rule 1 waiting
 * for the chain's net (reported P - F != N) books from this.
 */
export async function provenInSuspense(tx: DbExecutor, intentId: string): Promise<bigint | null> {
  const { rows } = await tx.execute<{ amount: string | null }>(sql`
    select sum(p.amount)::text as amount
    from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId} and e.kind = 'checkout.proven_reversed'
      and a.code like 'assets:in\\_transit:%'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)`);
  const amount = rows[0]?.amount;
  return amount === null || amount === undefined ? null : BigInt(amount);
}

/**
 * Rule 1 is live again (revision `revision` booked after a failure): the proven money rule 4 put in
 * suspense goes back to the sale. Every live `checkout.proven_reversed` entry of the intent is
 * reversed (`reversal:<its key>`, once each, dated with the new confirmation) and
 * `proven_then_failed` resolves. Nothing while the revision is not booked (no amounts yet, say):
 * the money stays in suspense. Called only when an earlier rule-1 entry was reversed.
 */
export async function returnProvenFromSuspense(
  tx: DbExecutor,
  intentId: string,
  revision: number,
  confirmedAt: Date,
): Promise<void> {
  const { rows } = await executePrepared<{ id: string; confirmed: boolean }>(
    tx,
    sql`
    select e.id::text,
           exists (select 1 from ledger_entries c
                   where c.idempotency_key = ${checkoutConfirmedKey(intentId, revision)}) as confirmed
    from ledger_entries e
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId} and e.kind = 'checkout.proven_reversed'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id`,
  );
  if (rows.length === 0 || !rows[0]?.confirmed) return;
  for (const row of rows) {
    await reverseEntry(tx, BigInt(row.id), `intent ${intentId} confirmed again`, { occurredAt: confirmedAt });
  }
  await resolveFinding(tx, 'proven_then_failed', { type: 'checkout_intent', id: intentId });
}

/**
 * A reorg orphaned a proof of the intent (rule 3 reversed it): the money a failure had moved from
 * in_transit to suspense on the strength of that proof is no longer proven, so those moves are
 * reversed too. If the transfer is included again, the settlement books it as what it then is
 * (rule 9 for a failed intent), and a new failure after a new proof moves it again.
 */
export async function unwindProvenSuspense(tx: DbExecutor, intentId: string, reason: string): Promise<void> {
  const { rows } = await tx.execute<{ id: string }>(sql`
    select e.id::text from ledger_entries e
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId} and e.kind = 'checkout.proven_reversed'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id`);
  for (const row of rows) await reverseEntry(tx, BigInt(row.id), reason);
}
