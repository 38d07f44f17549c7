import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';
import { booksSale, fundedTotal, fundingMined, paymentMined } from './oracle.ts';
import type { World } from './world.ts';

/**
 * The allocations once the world is quiet (docs/accounting.md, "Pieces and bundles"): every side
 * of a final transfer into or out of a store's merchant or custody wallet is allocated in whole
 * (to what explains it, or to suspense or the owner: nothing is left unsaid), every sale whose
 * payment is on chain holds exactly its N in payment allocations, and every funded link holds
 * exactly what custody sent its pool. From the world's ground truth alone, beside the balances.
 */
export async function judgeAllocations(
  db: Db,
  world: World,
  facts: { mined: ReadonlySet<string>; known: ReadonlySet<string>; knownLinks: ReadonlySet<string> },
): Promise<string[]> {
  const problems: string[] = [];
  const wallets = [...new Set(world.stores.flatMap((s) => [s.merchant, s.custody]))].map(
    (a) => sql`${a.toLowerCase()}`,
  );
  const sides = await db.execute<{
    id: string;
    tx_hash: string;
    side: string;
    value: string;
    allocated: string;
  }>(sql`
    select t.id::text, t.tx_hash, s.side, t.value::text,
      coalesce((select sum(a.amount) from allocations a where a.transfer_id = t.id and a.side = s.side), 0)::text as allocated
    from chain_transfers t
    cross join lateral (values ('in', t.to_address), ('out', t.from_address)) as s(side, wallet)
    where t.state = 'final' and t.value > 0 and t.from_address <> t.to_address
      and s.wallet in (${sql.join(wallets, sql`, `)})
      -- A contract outside the registry (the look-alike) moves no money: nothing to allocate.
      and (t.chain_id, t.token) in (${sql.join(
        world.tokens.map((k) => sql`(${k.chainId}::bigint, ${k.address.toLowerCase()})`),
        sql`, `,
      )})`);
  for (const s of sides.rows)
    if (s.allocated !== s.value)
      problems.push(
        `allocations: the ${s.side} side of transfer ${s.tx_hash.slice(0, 10)} (${s.id}) holds ${s.allocated} of ${s.value}`,
      );

  const held = await db.execute<{
    obligation_type: string;
    obligation_id: string;
    purpose: string;
    total: string;
  }>(sql`
    select obligation_type, obligation_id, purpose, sum(amount)::text as total from allocations
    where purpose in ('payment', 'funding') group by 1, 2, 3`);
  const holds = (type: string, id: string, purpose: string) =>
    BigInt(
      held.rows.find((r) => r.obligation_type === type && r.obligation_id === id && r.purpose === purpose)
        ?.total ?? '0',
    );
  for (const intent of world.intents) {
    if (!booksSale(world, intent, facts.known, facts.mined) || !paymentMined(intent, facts.mined)) continue;
    const got = holds('checkout_intent', intent.id, 'payment');
    if (got !== intent.P - intent.F)
      problems.push(
        `allocations: intent ${intent.id} holds ${got} of its payment, N is ${intent.P - intent.F}`,
      );
  }
  // Equal payouts of one store and token whose create answers were lost are told apart only by
  // the order their links are learnt in (sim/nearMisses.ts, near_equal_payouts; stateChecks.ts
  // judges their statuses alike): which funding is whose may be swapped between them, so their
  // links are judged as a group, what they hold against what custody sent them.
  const groups = new Map<string, Array<{ linkId: string; want: bigint; got: bigint }>>();
  for (const p of world.payouts) {
    if (!facts.knownLinks.has(p.referenceId) || !fundingMined(p, facts.mined)) continue;
    const key = `${p.storeId}:${p.token.chainId}:${p.token.address}:${p.A}`;
    const group = groups.get(key) ?? [];
    group.push({
      linkId: p.linkId,
      want: fundedTotal(p, facts.mined),
      got: holds('claim_link', p.linkId, 'funding'),
    });
    groups.set(key, group);
  }
  const sorted = (xs: bigint[]) => xs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join(',');
  for (const group of groups.values()) {
    if (sorted(group.map((l) => l.want)) === sorted(group.map((l) => l.got))) continue;
    for (const { linkId, want, got } of group)
      if (got !== want)
        problems.push(`allocations: link ${linkId} holds ${got} of its funding, custody sent ${want}`);
  }
  return problems;
}
