import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';

/** A chain_transfers row as the matching code reads it (numbers as PostgreSQL sends them: strings). */
export type TransferRow = {
  id: string;
  chain_id: string;
  tx_hash: string;
  log_index: number;
  block_number: string;
  block_hash: string;
  block_time: Date;
  token: string;
  from_address: string;
  to_address: string;
  value: string;
  state: 'pending' | 'final' | 'orphaned';
  final_at: Date | null;
  matched_as: string | null;
  matched_ref: string | null;
  store_id: string | null;
  revival: number;
};

/** The columns of TransferRow, for `select ${transferColumns} from chain_transfers ...`. */
export const transferColumns = sql.raw(
  `id::text, chain_id::text, tx_hash, log_index, block_number::text, block_hash, block_time, token,
   from_address, to_address, value::text, state, final_at, matched_as, matched_ref, store_id, revival`,
);

export function transferFact(row: TransferRow): ChainTransferFact {
  return {
    chainId: Number(row.chain_id),
    txHash: row.tx_hash as `0x${string}`,
    logIndex: row.log_index,
    blockNumber: BigInt(row.block_number),
    blockHash: row.block_hash as `0x${string}`,
    tokenAddress: row.token as `0x${string}`,
    from: row.from_address as `0x${string}`,
    to: row.to_address as `0x${string}`,
    amount: BigInt(row.value),
    occurredAt: new Date(row.block_time),
    revival: row.revival,
  };
}

/** Records what the ledger booked from a final row (comma-joined when one log touched two watched wallets). */
export async function markApplied(
  tx: DbExecutor,
  rowId: string,
  matchedAs: string[],
  matchedRef: string | null,
  storeId: string | null,
): Promise<void> {
  await tx.execute(sql`
    update chain_transfers
    set matched_as = ${matchedAs.join(',') || 'ignored'}, matched_ref = ${matchedRef}, store_id = ${storeId},
        applied_at = now()
    where id = ${rowId}::bigint`);
}

/** What matching did with one final row: booked it (or decided it books nothing), or left it for a later pass. */
export type MatchDecision = { kind: 'applied' } | { kind: 'deferred' };
