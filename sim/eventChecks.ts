import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';
import { parseDecimalAmount } from '../src/money/decimalAmount.ts';
import type { World } from './world.ts';

/**
 * What the outbound events must say (README, "Outbound events"): a consumer that folds the outbox,
 * deduped by id, ends with what the ledger says.
 * - per intent, the `net_amount` of `payment.booked` less that of `payment.booked.reversed` is
 *   what rule 1's entries (net of reversals) hold in in_transit; the `amount` of `payment.proven`
 *   less that of `payment.proven.reversed` is what rule 2's entries added to the wallet;
 * - per payout, `claimed` and `refunded` are announced (net of reversals) once exactly when the
 *   books hold the link claimed or refunded, and never more than once;
 * - no event for a booking that rolled back: each names an entry that is in the ledger.
 */
export async function judgeEvents(db: Db, world: World): Promise<string[]> {
  const problems: string[] = [];
  const { rows: events } = await db.execute<{
    event_id: string;
    type: string;
    payload: Record<string, unknown>;
  }>(
    sql`select event_id, type, payload from event_outbox where type like 'payment.%' or type like 'payout.%'`,
  );
  const decimalsOf = (p: Record<string, unknown>): number | undefined =>
    world.tokens.find(
      (t) =>
        t.chainId === Number(p.chain_id) && t.address.toLowerCase() === String(p.token_address).toLowerCase(),
    )?.decimals;

  const folded = new Map<string, bigint>();
  const add = (key: string, units: bigint) => folded.set(key, (folded.get(key) ?? 0n) + units);
  for (const e of events) {
    const p = e.payload;
    const [base, reversed] = e.type.endsWith('.reversed') ? [e.type.slice(0, -9), true] : [e.type, false];
    const sign = reversed ? -1n : 1n;
    if (base === 'payment.booked' || base === 'payment.proven') {
      const field = base === 'payment.booked' ? 'net_amount' : 'amount';
      const decimals = decimalsOf(p);
      if (decimals === undefined || typeof p[field] !== 'string') {
        problems.push(`event ${e.event_id}: no token or ${field} to sum`);
        continue;
      }
      add(`${base} ${p.intent_id}`, sign * parseDecimalAmount(p[field] as string, decimals));
    }
    if (base === 'payout.settled' && (p.outcome === 'claimed' || p.outcome === 'refunded'))
      add(`${p.outcome} ${p.payout_id}`, sign);
  }

  // Rule 1's and rule 2's entries, net of reversals, per intent. A proof is what it moved into the
  // wallet; a share of a log paying several intents moves nothing there, and is what it took
  // from suspense (the first proof's excess).
  const { rows: ledger } = await db.execute<{ key: string; units: string }>(sql`
    with per_entry as (
      select e.id, e.kind, e.ref_id,
             sum(p.amount) filter (where a.code like 'assets:in_transit:%') as in_transit,
             sum(p.amount) filter (where a.code like 'assets:wallet:%') as wallet,
             sum(p.amount) filter (where a.code like 'assets:suspense:%') as suspense
      from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
      where e.kind in ('checkout.confirmed', 'checkout.confirmed.reversal', 'chain.payment_proven', 'chain.payment_proven.reversal')
      group by e.id, e.kind, e.ref_id)
    select case when kind like 'checkout.confirmed%' then 'payment.booked ' else 'payment.proven ' end || ref_id as key,
           sum(case when kind like 'checkout.confirmed%' then coalesce(in_transit, 0)
                    else coalesce(wallet, suspense, 0) end)::text as units
    from per_entry
    group by 1`);
  const booked = new Map(ledger.map((r) => [r.key, BigInt(r.units)]));
  for (const key of new Set([
    ...booked.keys(),
    ...[...folded.keys()].filter((k) => k.startsWith('payment.')),
  ])) {
    const want = booked.get(key) ?? 0n;
    const got = folded.get(key) ?? 0n;
    if (want !== got) problems.push(`events: ${key} folds to ${got}, the ledger says ${want}`);
  }

  const { rows: payouts } = await db.execute<{ id: string; claimed: boolean; refunded: boolean }>(sql`
    select id, claimed_at is not null as claimed, refunded_at is not null as refunded from payouts`);
  for (const payout of payouts) {
    for (const outcome of ['claimed', 'refunded'] as const) {
      const want = payout[outcome] ? 1n : 0n;
      const got = folded.get(`${outcome} ${payout.id}`) ?? 0n;
      if (want !== got)
        problems.push(`events: payout ${payout.id} ${outcome} folds to ${got}, the books say ${want}`);
    }
  }

  // No event for a booking that rolled back: the entries they name exist.
  const { rows: orphans } = await db.execute<{ event_id: string }>(sql`
    select o.event_id from event_outbox o
    where (o.type like 'payment.%' or o.type like 'payout.%') and o.payload ? 'entry_id'
      and not exists (select 1 from ledger_entries e where e.id = (o.payload->>'entry_id')::bigint)`);
  for (const o of orphans) problems.push(`event ${o.event_id} names an entry the ledger does not hold`);
  return problems;
}
