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

/**
 * Records what the ledger booked from one side of a final row (the sender's outflow, the
 * receiver's inflow, or both at once): `matchedAs` is added to the kinds already recorded (a row
 * between two watched wallets collects one kind per side, comma-joined), `remove` drops kinds a
 * later decision replaces (a proof moving the inflow out of suspense, a return re-matched), the
 * ref replaces the old one when given, and the row keeps the store of its first decision.
 * `applied_at` is not set here: the settlement sets it once every watched side is decided
 * (finishRow), so a side explained first (a proof from the intent's side) never hides the other.
 */
export async function markApplied(
  tx: DbExecutor,
  rowId: string,
  matchedAs: string[],
  matchedRef: string | null,
  storeId: string | null,
  options: { remove?: string[]; store?: 'keep' | 'replace' } = {},
): Promise<void> {
  const storeSql =
    options.store === 'replace' ? sql`coalesce(${storeId}, store_id)` : sql`coalesce(store_id, ${storeId})`;
  await tx.execute(sql`
    update chain_transfers
    set matched_as = coalesce(nullif(array_to_string(array(
          select k from unnest(string_to_array(coalesce(matched_as, ''), ',')) with ordinality as u(k, n)
          where k not in ('', 'ignored') and k <> all(${sql.param(options.remove ?? [])}::text[])
          order by n) || ${sql.param(matchedAs)}::text[], ','), ''), 'ignored'),
        matched_ref = coalesce(${matchedRef}, matched_ref),
        store_id = ${storeSql}
    where id = ${rowId}::bigint`);
}

/** The row is settled: every watched side of it is decided (the settlement's last write). */
export async function finishRow(tx: DbExecutor, rowId: string): Promise<void> {
  await tx.execute(sql`
    update chain_transfers set matched_as = coalesce(matched_as, 'ignored'), applied_at = now()
    where id = ${rowId}::bigint`);
}

/**
 * What a row's recorded kinds already decide: the receiver's inflow (a proof, suspense, a refund
 * into custody) and the sender's outflow (an owner transfer, a return, a pool's claim, sweep or
 * refund, a custody funding). A row between two watched wallets is two facts, each decided once.
 */
export function decidedSides(matchedAs: string | null): { inflow: boolean; outflow: boolean } {
  const kinds = (matchedAs ?? '').split(',');
  const has = (...ks: string[]) => ks.some((k) => kinds.includes(k));
  return {
    inflow: has(
      'payment_proof',
      'payment_mismatch',
      'transfer_in_unmatched',
      'claim_link_refunded',
      'claim_link_refund_piece',
    ),
    outflow: has(
      'transfer_out_unmatched',
      'payment_returned',
      'claim_link_claimed',
      'claim_link_fee_sweep',
      'claim_link_refunded',
      'claim_link_refund_piece',
      'claim_link_funding',
      'claim_link_funding_fee',
    ),
  };
}

/** What matching did with one side of a final row: booked it (or decided it books nothing), or left it for a later pass. */
export type MatchDecision =
  | {
      kind: 'applied';
      /** The entry explained the receiving wallet's side too (a refund: the pool's out, custody's in). */
      inflowToo?: boolean;
    }
  | { kind: 'deferred' };
