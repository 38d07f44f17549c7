import { sql } from 'drizzle-orm';
import type { Db } from '../src/db/database.ts';
import { finalStatus } from './oracle.ts';
import type { World } from './world.ts';

/**
 * The final states the books must hold once the world is quiet: every intent stablebooks knows
 * has the status the service last gave it, and every payout it created has the link status the
 * service holds for it (payouts the books never learnt of are the balances' business, not this).
 * Equal payouts whose pools only their order tells apart are judged together.
 */
export async function judgeFinalStates(
  db: Db,
  world: World,
  facts: { known: ReadonlySet<string>; linkStatus: (referenceId: string) => string | undefined },
): Promise<string[]> {
  const problems: string[] = [];
  const { rows: intents } = await db.execute<{ id: string; status: number | null }>(
    sql`select id, status from checkout_intents`,
  );
  const statusOf = new Map(intents.map((r) => [r.id, r.status]));
  for (const intent of world.intents) {
    if (!facts.known.has(intent.id)) continue;
    const want = finalStatus(intent);
    const got = statusOf.get(intent.id);
    if (got !== want)
      problems.push(`intent ${intent.id}: status ${got ?? 'missing'}, the service says ${want}`);
  }
  // Equal payouts of one store and token whose create answers were lost are told apart by nothing
  // but the order their links are learnt in (sim/nearMisses.ts, near_equal_payouts): which pool is
  // whose may be swapped between them, so their statuses are judged as a group.
  const { rows: payouts } = await db.execute<{
    reference_id: string;
    link_status: string | null;
    group: string;
  }>(
    sql`select reference_id, link_status, store_id || ':' || chain_id || ':' || token_address || ':' || amount as group
        from payouts`,
  );
  const groups = new Map<string, { refs: string[]; want: string[]; got: string[] }>();
  for (const p of payouts) {
    const want = facts.linkStatus(p.reference_id);
    if (want === undefined) continue;
    const g = groups.get(p.group) ?? { refs: [], want: [], got: [] };
    g.refs.push(p.reference_id);
    g.want.push(want);
    g.got.push(p.link_status ?? 'null');
    groups.set(p.group, g);
  }
  for (const g of groups.values()) {
    const [want, got] = [[...g.want].sort().join(','), [...g.got].sort().join(',')];
    if (want !== got)
      problems.push(
        `payout ${g.refs.join(' and ')}: link status ${g.got.join(', ')}, the service says ${g.want.join(', ')}`,
      );
  }
  return problems;
}
