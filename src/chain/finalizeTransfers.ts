import { sql } from 'drizzle-orm';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { Db } from '../db/database.ts';
import { loadReceiptRows, recheckReceiptRows } from './receiptRecheck.ts';
import type { ChainRpc } from './rpcClients.ts';

/**
 * Finality (docs/accounting.md, "Payments, payouts and the chain"): a pending transfer at or below the chain's final block becomes
 * `final`, the strongest fact the daemon has. Rows the indexer read from logs up to its cursor
 * stand on the cursor's hash, checked this pass; a row from single-transaction verification had
 * its block's hash checked by the pass's reorg check when it was at or below the cursor then
 * (`checkedBlock`); one above that (in a block the indexer had not read when the pass began) has
 * its receipt re-read first, and moves with its transaction if a reorg put it elsewhere.
 *
 * A row from logs also waits for its block to be verified (`verifiedBlock`, chainCursor.ts): read
 * once more while final, so that the matcher sees every transfer of a block, including those a
 * first read near the head missed, when its rows become final.
 */
export async function finalizeTransfers(
  deps: { db: Db; rpc: ChainRpc; registry: ChainRegistry },
  input: {
    chainId: number;
    finalBlock: bigint;
    /** The cursor now: rows from logs at or below it were read from the chain it belongs to. */
    cursorBlock: bigint | null;
    /** The cursor when the pass checked hashes (before reading logs); default cursorBlock. */
    checkedBlock?: bigint | null;
    /** Rows from logs above this block stay pending (their blocks await the re-read); default cursorBlock. */
    verifiedBlock?: bigint | null;
    now: Date;
  },
): Promise<{ finalized: number; orphaned: number }> {
  const { chainId, finalBlock, now } = input;
  const cursorBlock = input.cursorBlock ?? -1n;
  const checked = input.checkedBlock === undefined ? cursorBlock : (input.checkedBlock ?? -1n);
  const checkedBlock = checked < cursorBlock ? checked : cursorBlock;
  const verifiedBlock = input.verifiedBlock ?? cursorBlock;
  const logsBlock = verifiedBlock < cursorBlock ? verifiedBlock : cursorBlock;
  const ahead = await loadReceiptRows(
    deps.db,
    chainId,
    sql`state = 'pending' and block_number <= ${finalBlock.toString()}::bigint
      and block_number > ${checkedBlock.toString()}::bigint`,
  );
  const recheck =
    ahead.length > 0
      ? await recheckReceiptRows(deps, ahead, now)
      : { confirmedIds: [], orphanedIds: [], insertedIds: [] };
  const verified = [...recheck.confirmedIds, ...recheck.insertedIds].map((id) => id.toString());
  const verifiedClause =
    verified.length > 0
      ? sql` or id in (${sql.join(
          verified.map((id) => sql`${id}::bigint`),
          sql`, `,
        )})`
      : sql``;
  const { rows } = await deps.db.execute<{ id: string }>(sql`
    update chain_transfers set state = 'final', final_at = ${now.toISOString()}::timestamptz
    where chain_id = ${chainId} and state = 'pending'
      and block_number <= ${finalBlock.toString()}::bigint
      and ((source = 'logs' and block_number <= ${logsBlock.toString()}::bigint)
        or (source = 'receipt' and block_number <= ${checkedBlock.toString()}::bigint)${verifiedClause})
    returning id::text`);
  return { finalized: rows.length, orphaned: recheck.orphanedIds.length };
}
