import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';

/**
 * Writes transfers into chain_transfers, one row per inclusion (chain, tx, log index, block hash):
 * a fact seen again is a no-op (`on conflict do nothing`), a fact in another block is another row.
 * New rows are `pending`; finality and orphaning are the indexer's later steps. store_id and the
 * matched_* columns are left to the matching code that books the row.
 */
const ROWS_PER_STATEMENT = 1000;

/** Inserts the transfers; returns the ids of the rows that were new. */
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
      on conflict (chain_id, tx_hash, log_index, block_hash) do nothing
      returning id::text`);
    for (const r of rows) ids.push(BigInt(r.id));
  }
  return ids;
}
