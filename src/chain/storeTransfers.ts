import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';

/**
 * Writes transfers into chain_transfers, one row per inclusion (chain, tx, log index, block hash):
 * a fact seen again is a no-op, a fact in another block is another row. New rows are `pending`;
 * finality and orphaning are the indexer's later steps. store_id and the matched_* columns are
 * left to the matching code that books the row.
 *
 * A fact seen again whose row was orphaned is revived: the chain has that block hash again (it
 * flipped back, or a lying URL made a reorg that was not). The row is pending once more, and:
 * - not booked: nothing else; the matcher books it once it is final, as if never orphaned;
 * - booked and not yet unwound: it stays booked, nothing to undo or redo;
 * - booked and unwound (its entries reversed): its matching is cleared and its revival counted,
 *   so the matcher books it again under keys of their own (chainInclusionKeyPart).
 * The unwinder holds the row's lock while it reverses, so the revival sees either before or after.
 * The row takes the source of the read that revived it: a row from a receipt is checked by
 * receipt before it becomes final, while a row from logs is vouched for by the cursor's hash,
 * which says nothing about a receipt from a node on another fork.
 */
const ROWS_PER_STATEMENT = 1000;

/** Inserts the transfers; returns the ids of the rows that were new or revived. */
export async function storeTransfers(
  db: DbExecutor,
  facts: readonly ChainTransferFact[],
  source: 'logs' | 'receipt',
): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < facts.length; i += ROWS_PER_STATEMENT) {
    const chunk = facts.slice(i, i + ROWS_PER_STATEMENT);
    const values = sql.join(
      chunk.map((f) => {
        return sql`(${f.chainId}::bigint, ${f.txHash.toLowerCase()}, ${f.logIndex}::int, ${f.blockNumber.toString()}::bigint,
          ${f.blockHash.toLowerCase()}, ${f.occurredAt.toISOString()}::timestamptz, ${f.tokenAddress.toLowerCase()},
          ${f.from.toLowerCase()}, ${f.to.toLowerCase()}, ${f.amount.toString()}::numeric, ${source})`;
      }),
      sql`, `,
    );
    const { rows } = await db.execute<{ id: string }>(sql`
      insert into chain_transfers
        (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token, from_address, to_address,
         value, source)
      values ${values}
      on conflict (chain_id, tx_hash, log_index, block_hash) do update set
        state = 'pending', orphaned_at = null, final_at = null, source = excluded.source,
        revival = chain_transfers.revival + (chain_transfers.unwound_at is not null)::int,
        matched_as = case when chain_transfers.unwound_at is null then chain_transfers.matched_as end,
        matched_ref = case when chain_transfers.unwound_at is null then chain_transfers.matched_ref end,
        store_id = case when chain_transfers.unwound_at is null then chain_transfers.store_id end,
        applied_at = case when chain_transfers.unwound_at is null then chain_transfers.applied_at end,
        unwound_at = null
      where chain_transfers.state = 'orphaned'
      returning id::text`);
    for (const r of rows) ids.push(BigInt(r.id));
  }
  return ids;
}
