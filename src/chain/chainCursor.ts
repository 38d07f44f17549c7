import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/**
 * The indexer's cursor of one chain: the last block whose logs are stored, and that block's hash.
 *
 * `verifiedBlock`: every block up to it has had its logs read at least once while it was final
 * (at or below the final block). A read near the head may miss logs (a lagging node behind a load
 * balancer or a fallback answers an incomplete eth_getLogs with a good end hash), so the blocks
 * between it and the cursor are read once more when they become final (indexChain.ts). It never
 * passes the cursor: a rewind takes it down too.
 */
export interface ChainCursor {
  blockNumber: bigint;
  blockHash: `0x${string}`;
  headBlock: bigint | null;
  finalizedBlock: bigint | null;
  verifiedBlock: bigint;
}

/**
 * A cursor row written before verified_block existed (or by a tool that does not set it) counts
 * as verified up to its recorded finality: what was read then is not read again (migration 0011).
 */
const VERIFIED_OR_LEGACY = sql`coalesce(verified_block, least(block_number, finalized_block))`;

export async function readCursor(db: DbExecutor, chainId: number): Promise<ChainCursor | null> {
  const { rows } = await db.execute<{
    block_number: string;
    block_hash: string;
    head_block: string | null;
    finalized_block: string | null;
    verified_block: string;
  }>(sql`
    select block_number::text, block_hash, head_block::text, finalized_block::text,
      ${VERIFIED_OR_LEGACY}::text as verified_block
    from chain_cursors where chain_id = ${chainId}`);
  const row = rows[0];
  if (!row) return null;
  return {
    blockNumber: BigInt(row.block_number),
    blockHash: row.block_hash as `0x${string}`,
    headBlock: row.head_block === null ? null : BigInt(row.head_block),
    finalizedBlock: row.finalized_block === null ? null : BigInt(row.finalized_block),
    verifiedBlock: BigInt(row.verified_block),
  };
}

/**
 * Moves the cursor (forward after a range, back after a reorg), with the head seen, and the
 * finality seen when given. The finalized block never moves back (a fallback node that lags
 * behind another does not undo what the other reported; `greatest` skips a null), and is what
 * balance proofs are made at (with the cursor's block, whichever is lower): a range commit passes
 * none, so it only moves once the pass's finality step has marked the rows up to it final.
 * The verified block is set when given, kept otherwise, and never left above the cursor.
 */
export async function writeCursor(
  db: DbExecutor,
  chainId: number,
  cursor: {
    blockNumber: bigint;
    blockHash: string;
    headBlock: bigint;
    finalizedBlock?: bigint | null;
    verifiedBlock?: bigint | null;
  },
): Promise<void> {
  await db.execute(sql`
    insert into chain_cursors (chain_id, block_number, block_hash, head_block, finalized_block, verified_block,
      updated_at)
    values (${chainId}, ${cursor.blockNumber.toString()}::bigint, ${cursor.blockHash.toLowerCase()},
      ${cursor.headBlock.toString()}::bigint, ${cursor.finalizedBlock?.toString() ?? null}::bigint,
      ${cursor.verifiedBlock?.toString() ?? null}::bigint, now())
    on conflict (chain_id) do update set
      block_number = excluded.block_number, block_hash = excluded.block_hash,
      head_block = excluded.head_block,
      finalized_block = greatest(chain_cursors.finalized_block, excluded.finalized_block),
      verified_block = least(
        coalesce(excluded.verified_block, chain_cursors.verified_block,
          least(chain_cursors.block_number, chain_cursors.finalized_block)),
        excluded.block_number),
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
