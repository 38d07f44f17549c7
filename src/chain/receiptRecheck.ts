import { sql } from 'drizzle-orm';
import type { Hex } from 'viem';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { Db } from '../db/database.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { ReceiptBlockUnavailableError, receiptTransfers } from './receiptTransfers.ts';
import type { ChainRpc } from './rpcClients.ts';
import { storeTransfers } from './storeTransfers.ts';

/**
 * Re-reading the receipt of transfers stored by single-transaction verification, for blocks the
 * indexer's hash checks do not cover: before such a row becomes final, and after a reorg orphaned
 * one. When the transaction now sits in another block, the old inclusion is orphaned and the new
 * one stored (a log's index can change with its block, so the new log is the one with the same
 * token, sender, recipient and value, in order); when it is back in the block of an orphaned row,
 * that row is revived (storeTransfers.ts).
 */
export interface ReceiptRow {
  id: bigint;
  txHash: Hex;
  logIndex: number;
  blockHash: Hex;
  token: string;
  from: string;
  to: string;
  value: bigint;
  state: 'pending' | 'final' | 'orphaned';
}

export interface RecheckResult {
  /** Rows whose receipt still has them in the same block. */
  confirmedIds: bigint[];
  /** Rows orphaned now (the transaction is gone or in another block). */
  orphanedIds: bigint[];
  /** New inclusions stored, or orphaned ones revived (pending). */
  insertedIds: bigint[];
  /** Transactions whose receipt could not be read this time (they stay as they are). */
  unavailable: number;
}

export async function recheckReceiptRows(
  deps: { db: Db; rpc: ChainRpc; registry: ChainRegistry },
  rows: readonly ReceiptRow[],
  now: Date,
): Promise<RecheckResult> {
  const result: RecheckResult = { confirmedIds: [], orphanedIds: [], insertedIds: [], unavailable: 0 };
  const byTx = new Map<string, ReceiptRow[]>();
  for (const r of rows) byTx.set(r.txHash, [...(byTx.get(r.txHash) ?? []), r]);
  for (const [txHash, txRows] of byTx) {
    let receipt: Awaited<ReturnType<typeof receiptTransfers>>;
    try {
      receipt = await receiptTransfers(deps.rpc, deps.registry, deps.rpc.chainId, txHash as Hex);
    } catch (err) {
      if (err instanceof ReceiptBlockUnavailableError) {
        result.unavailable++;
        continue;
      }
      throw err;
    }
    const landedIn = receipt.status === 'success' ? receipt.blockHash : null;
    const stale = txRows.filter((r) => r.blockHash !== landedIn);
    // An orphaned row whose transaction is back in that very block is revived by storing it again.
    const returned = txRows.filter((r) => r.blockHash === landedIn && r.state === 'orphaned');
    for (const r of txRows)
      if (r.blockHash === landedIn && r.state !== 'orphaned') result.confirmedIds.push(r.id);
    if (stale.length === 0 && returned.length === 0) continue;
    const reincluded =
      receipt.status === 'success' ? correspondingTransfers([...stale, ...returned], receipt.transfers) : [];
    await deps.db.transaction(async (tx) => {
      const toOrphan = stale.filter((r) => r.state !== 'orphaned').map((r) => r.id.toString());
      if (toOrphan.length > 0) {
        const { rows: orphaned } = await tx.execute<{ id: string }>(sql`
          update chain_transfers set state = 'orphaned', orphaned_at = ${now.toISOString()}::timestamptz
          where state <> 'orphaned' and id in (${sql.join(
            toOrphan.map((id) => sql`${id}::bigint`),
            sql`, `,
          )})
          returning id::text`);
        for (const o of orphaned) result.orphanedIds.push(BigInt(o.id));
      }
      const ids = await storeTransfers(tx, reincluded, 'receipt');
      result.insertedIds.push(...ids);
    });
  }
  return result;
}

/** For each stale row, the log of the new receipt that is the same transfer (token, from, to, value), each used once. */
function correspondingTransfers(
  stale: readonly ReceiptRow[],
  transfers: readonly ChainTransferFact[],
): ChainTransferFact[] {
  const unused = [...transfers].sort((a, b) => a.logIndex - b.logIndex);
  const out: ChainTransferFact[] = [];
  for (const row of [...stale].sort((a, b) => a.logIndex - b.logIndex)) {
    const i = unused.findIndex(
      (t) =>
        t.tokenAddress === row.token.toLowerCase() &&
        t.from === row.from.toLowerCase() &&
        t.to === row.to.toLowerCase() &&
        t.amount === row.value,
    );
    if (i < 0) continue;
    const [match] = unused.splice(i, 1);
    if (match) out.push(match);
  }
  return out;
}

/** Non-orphaned or orphaned receipt rows, as recheckReceiptRows takes them. */
export async function loadReceiptRows(
  db: Db,
  chainId: number,
  where: ReturnType<typeof sql>,
): Promise<ReceiptRow[]> {
  const { rows } = await db.execute<{
    id: string;
    tx_hash: string;
    log_index: number;
    block_hash: string;
    token: string;
    from_address: string;
    to_address: string;
    value: string;
    state: ReceiptRow['state'];
  }>(sql`
    select id::text, tx_hash, log_index, block_hash, token, from_address, to_address, value::text, state
    from chain_transfers where chain_id = ${chainId} and source = 'receipt' and (${where})
    order by id`);
  return rows.map((r) => ({
    id: BigInt(r.id),
    txHash: r.tx_hash as Hex,
    logIndex: r.log_index,
    blockHash: r.block_hash as Hex,
    token: r.token,
    from: r.from_address,
    to: r.to_address,
    value: BigInt(r.value),
    state: r.state,
  }));
}
