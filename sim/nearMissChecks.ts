import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';
import { finalStatus, inRegistry, paymentMined } from './oracle.ts';
import type { World } from './world.ts';

/**
 * What the books must say about near misses (sim/nearMisses.ts) beyond the balances, from the
 * world's ground truth (docs/accounting.md, rules 2, 5 and 9):
 * - each confirmed intent stablebooks knows whose payment is final is proven by its own paying
 *   transaction, never by a look-alike (a twin's, a stranger's of the same amount);
 * - each owner withdrawal from a custody wallet is open as `unmatched_transfer_out`;
 * - each payout whose create answer was lost and whose funding is final has its funding matched by
 *   amount (`funding_matched_by_amount` on its link), and none still waits for a create outcome.
 */
export interface NearMissFacts {
  mined: ReadonlySet<string>;
  known: ReadonlySet<string>;
  knownLinks: ReadonlySet<string>;
}

export async function judgeNearMisses(db: Db, world: World, facts: NearMissFacts): Promise<string[]> {
  const problems: string[] = [];
  const txOf = (text: string) => /0x[0-9a-f]{64}/i.exec(text)?.[0]?.toLowerCase();

  const proofs = await db.execute<{ ref_id: string; idempotency_key: string }>(sql`
    select e.ref_id, e.idempotency_key from ledger_entries e
    where e.kind = 'chain.payment_proven'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)`);
  const provenBy = new Map<string, Set<string>>();
  for (const r of proofs.rows) {
    const tx = txOf(r.idempotency_key);
    if (!tx) continue;
    const set = provenBy.get(r.ref_id) ?? new Set<string>();
    set.add(tx);
    provenBy.set(r.ref_id, set);
  }
  for (const intent of world.intents) {
    const paying = intent.route === 'temp' ? intent.tx2 : intent.tx1;
    if (
      finalStatus(intent) !== 20 ||
      !inRegistry(world, intent) ||
      !facts.known.has(intent.id) ||
      !paying ||
      !facts.mined.has(paying)
    )
      continue;
    // A direct payment in pieces (payment_pieces) is proven by every piece, once all are mined.
    const pieces = intent.route === 'direct' ? (intent.pieces ?? []).map((p) => p.txHash) : [];
    if (!paymentMined(intent, facts.mined)) continue;
    const want = [paying, ...pieces].map((t) => t.toLowerCase()).sort();
    const got = [...(provenBy.get(intent.id) ?? [])].sort();
    if (got.join() !== want.join())
      problems.push(
        `intent ${intent.id} proven by ${got.map((t) => t.slice(0, 10)).join(',') || 'nothing'}, not its payment ${want.map((t) => t.slice(0, 10)).join(',')}`,
      );
  }

  const custodies = new Set(world.stores.map((s) => s.custody));
  const outs = await db.execute<{ details: string }>(sql`
    select details::text as details from findings
    where kind = 'unmatched_transfer_out' and resolved_at is null`);
  const openOut = new Set(outs.rows.map((r) => txOf(r.details)));
  for (const stray of world.strays) {
    if (!custodies.has(stray.from) || !facts.mined.has(stray.txHash)) continue;
    if (!world.tokens.some((t) => t.address === stray.token)) continue;
    if (!openOut.has(stray.txHash.toLowerCase()))
      problems.push(`custody withdrawal ${stray.txHash.slice(0, 10)} has no open unmatched_transfer_out`);
  }

  const byAmount = await db.execute<{ ref_id: string }>(sql`
    select ref_id from findings where kind = 'funding_matched_by_amount'`);
  const matchedByAmount = new Set(byAmount.rows.map((r) => r.ref_id));
  for (const p of world.payouts) {
    if (!p.lostAnswer || !facts.knownLinks.has(p.referenceId) || !facts.mined.has(p.fundingTx)) continue;
    if (!matchedByAmount.has(p.linkId))
      problems.push(`payout ${p.referenceId}: its funding has no funding_matched_by_amount`);
  }
  const waiting = await db.execute<{ reference_id: string }>(sql`
    select p.reference_id from findings f join payouts p on p.id::text = f.ref_id
    where f.kind = 'funding_awaits_create_outcome' and f.resolved_at is null`);
  for (const r of waiting.rows)
    problems.push(`payout ${r.reference_id}: funding_awaits_create_outcome open at quiescence`);
  return problems;
}
