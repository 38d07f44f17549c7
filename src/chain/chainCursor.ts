import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/** The indexer's cursor of one chain: the last block whose logs are stored, and that block's hash. */
export interface ChainCursor {
  blockNumber: bigint;
  blockHash: `0x${string}`;
  headBlock: bigint | null;
  finalizedBlock: bigint | null;
}

export async function readCursor(db: DbExecutor, chainId: number): Promise<ChainCursor | null> {
  const { rows } = await db.execute<{
    block_number: string;
    block_hash: string;
    head_block: string | null;
    finalized_block: string | null;
  }>(sql`
    select block_number::text, block_hash, head_block::text, finalized_block::text
    from chain_cursors where chain_id = ${chainId}`);
  const row = rows[0];
  if (!row) return null;
  return {
    blockNumber: BigInt(row.block_number),
    blockHash: row.block_hash as `0x${string}`,
    headBlock: row.head_block === null ? null : BigInt(row.head_block),
    finalizedBlock: row.finalized_block === null ? null : BigInt(row.finalized_block),
  };
}

/**
 * Moves the cursor (forward after a range, back after a reorg), with the head seen, and the
 * finality seen when given. The finalized block never moves back (a fallback node that lags
 * behind another does not undo what the other reported; `greatest` skips a null), and is what
 * balance proofs are made at (with the cursor's block, whichever is lower): a range commit passes
 * none, so it only moves once the pass's finality step has marked the rows up to it final.
 */
export async function writeCursor(
  db: DbExecutor,
  chainId: number,
  cursor: { blockNumber: bigint; blockHash: string; headBlock: bigint; finalizedBlock?: bigint | null },
): Promise<void> {
  await db.execute(sql`
    insert into chain_cursors (chain_id, block_number, block_hash, head_block, finalized_block, updated_at)
    values (${chainId}, ${cursor.blockNumber.toString()}::bigint, ${cursor.blockHash.toLowerCase()},
      ${cursor.headBlock.toString()}::bigint, ${cursor.finalizedBlock?.toString() ?? null}::bigint, now())
    on conflict (chain_id) do update set
      block_number = excluded.block_number, block_hash = excluded.block_hash,
      head_block = excluded.head_block,
      finalized_block = greatest(chain_cursors.finalized_block, excluded.finalized_block),
      updated_at = now()`);
}

/** Records the head and finality seen by a pass (after its finality step); finality never moves back. */
export async function writeCursorHead(
  db: DbExecutor,
  chainId: number,
  headBlock: bigint,
  finalizedBlock: bigint,
): Promise<void> {
  await db.execute(sql`
    update chain_cursors set head_block = ${headBlock.toString()}::bigint,
      finalized_block = greatest(finalized_block, ${finalizedBlock.toString()}::bigint), updated_at = now()
    where chain_id = ${chainId}`);
}
