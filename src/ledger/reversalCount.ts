import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/**
 * How often entries of `kind` about `ref` have been reversed (their `<kind>.reversal` entries),
 * counting only reversals written before entry `before` when it is given. A booking's revision:
 * rule 1 keys its rebooking with it, and the outbound events name each announcement of a fact
 * with it (the n-th time an intent's payment is proven after n reversals).
 */
export async function reversalCount(
  tx: DbExecutor,
  ref: { type: string; id: string },
  kind: string,
  before?: bigint,
): Promise<number> {
  const { rows } = await tx.execute<{ n: number }>(sql`
    select count(*)::int as n from ledger_entries
    where ref_type = ${ref.type} and ref_id = ${ref.id} and kind = ${`${kind}.reversal`}
      ${before === undefined ? sql`` : sql`and id < ${before.toString()}::bigint`}`);
  return rows[0]?.n ?? 0;
}
