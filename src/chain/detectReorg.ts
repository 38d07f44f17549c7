import { sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { type BlockHeader, getBlockHeader, getBlockHeaders } from './blockHeaders.ts';
import type { ChainCursor } from './chainCursor.ts';
import { writeCursor } from './chainCursor.ts';
import type { ChainRpc } from './rpcClients.ts';

/**
 * Reorg detection (docs/accounting.md, rule 3): a block hash we stored that the chain no longer has
 * at that height means the block left the chain, and every transfer stored with it is orphaned.
 *
 * Checked on every pass, cheaply: a block hash commits to all its ancestors, and the indexer only
 * moves its cursor over ranges it read from the chain that ends in the cursor block (see
 * readTransferRange.ts), so while the chain still has the cursor's hash at that height, no block
 * at or below the cursor changed and every row read from logs still stands: one block read. Rows
 * stored by single-transaction verification in blocks no log row vouches for are the exception:
 * their hashes within the reorg window are checked beside it. Transfers above the cursor are
 * re-read by receipt instead (finalizeTransfers).
 *
 * Only when one of those hashes differs are the stored blocks walked: the cursor block and each
 * distinct (block number, block hash) of the non-orphaned transfers between head - reorgWindow
 * and the cursor. Three answers are not a reorg:
 * - the node has no block at that height (null): it is merely behind; skip the pass;
 * - another RPC URL still has the stored hash: the nodes disagree (one is on a minority fork or
 *   lagging); count it and skip the pass, the next one will see who was right;
 * - an RPC error: the pass ends with an error outcome, nothing changes.
 *
 * Since every block above a replaced block is replaced too, the hashes we walked also bound the
 * fork point from below: the cursor rewinds to the highest checked block that still matched (or,
 * when none did, reorgWindow blocks below the lowest mismatch), so the replaced blocks are read
 * again whatever they now hold.
 */
export interface StoredBlock {
  blockNumber: bigint;
  blockHash: `0x${string}`;
}

export type ReorgCheck =
  | { kind: 'ok'; checkedBlocks: number }
  | { kind: 'node_behind'; blockNumber: bigint }
  | { kind: 'disagreement'; blockNumber: bigint; storedHash: string; chainHash: string }
  | {
      kind: 'reorg';
      /** The lowest height whose stored hash the chain no longer has. */
      lowestBlock: bigint;
      /** Replaced blocks we can see: from the lowest mismatch to the highest stored block checked. */
      depth: number;
      /** Every stored (number, hash) the chain no longer has. */
      mismatched: StoredBlock[];
      /** Where the cursor goes: a block we know is on the chain now. */
      rewindTo: StoredBlock;
    };

/**
 * `cursorHeader`: the chain's block at the cursor's height when the caller has read it already
 * (in one batch with the head); read here otherwise.
 */
export async function checkForReorg(
  db: DbExecutor,
  rpc: ChainRpc,
  cursor: ChainCursor,
  head: bigint,
  reorgWindow: number,
  cursorHeader?: BlockHeader | null,
): Promise<ReorgCheck> {
  const atCursor =
    cursorHeader === undefined ? await getBlockHeader(rpc.client, cursor.blockNumber) : cursorHeader;
  if (!atCursor) return { kind: 'node_behind', blockNumber: cursor.blockNumber };
  if (atCursor.hash === cursor.blockHash.toLowerCase()) {
    const unvouched = await unvouchedBlocks(db, rpc.chainId, head - BigInt(reorgWindow), cursor.blockNumber);
    if (unvouched.length === 0) return { kind: 'ok', checkedBlocks: 1 };
    const headers = await getBlockHeaders(
      rpc.client,
      unvouched.map((s) => s.blockNumber),
    );
    const same = unvouched.every((s) => headers.get(s.blockNumber)?.hash === s.blockHash.toLowerCase());
    if (same) return { kind: 'ok', checkedBlocks: 1 + headers.size };
  }
  return walkStoredBlocks(db, rpc, cursor, head, reorgWindow);
}

/**
 * Blocks of non-orphaned receipt rows at or below the cursor, within the window, that no row read
 * from logs shares: the cursor's hash says nothing about them (the receipt may have come from a
 * block that left the chain before the indexer read that height).
 */
async function unvouchedBlocks(
  db: DbExecutor,
  chainId: number,
  windowStart: bigint,
  cursorBlock: bigint,
): Promise<StoredBlock[]> {
  const { rows } = await db.execute<{ block_number: string; block_hash: string }>(sql`
    select distinct r.block_number::text, r.block_hash from chain_transfers r
    where r.chain_id = ${chainId} and r.source = 'receipt' and r.state <> 'orphaned'
      and r.block_number >= ${windowStart.toString()}::bigint
      and r.block_number <= ${cursorBlock.toString()}::bigint
      and not exists (select 1 from chain_transfers l where l.chain_id = r.chain_id and l.source = 'logs'
                      and l.block_number = r.block_number and l.block_hash = r.block_hash)`);
  return rows.map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash as `0x${string}` }));
}

/** The full check, after a hash differed: every stored block in the window, and where to rewind. */
async function walkStoredBlocks(
  db: DbExecutor,
  rpc: ChainRpc,
  cursor: ChainCursor,
  head: bigint,
  reorgWindow: number,
): Promise<ReorgCheck> {
  const windowStart = head - BigInt(reorgWindow);
  const { rows } = await db.execute<{ block_number: string; block_hash: string }>(sql`
    select distinct block_number::text, block_hash from chain_transfers
    where chain_id = ${rpc.chainId} and state <> 'orphaned'
      and block_number >= ${windowStart.toString()}::bigint
      and block_number <= ${cursor.blockNumber.toString()}::bigint`);
  const stored: StoredBlock[] = [
    { blockNumber: cursor.blockNumber, blockHash: cursor.blockHash },
    ...rows.map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash as `0x${string}` })),
  ];
  const headers = await getBlockHeaders(
    rpc.client,
    stored.map((s) => s.blockNumber),
  );
  const mismatched: StoredBlock[] = [];
  const matched: StoredBlock[] = [];
  for (const s of stored) {
    const header = headers.get(s.blockNumber);
    if (!header) return { kind: 'node_behind', blockNumber: s.blockNumber };
    if (header.hash === s.blockHash.toLowerCase()) matched.push(s);
    else mismatched.push(s);
  }
  // The first look saw a difference the walk does not (the chain moved back meanwhile): nothing to do.
  if (mismatched.length === 0) return { kind: 'ok', checkedBlocks: headers.size };

  const lowest = mismatched.reduce((a, b) => (b.blockNumber < a.blockNumber ? b : a));
  const chainHash = headers.get(lowest.blockNumber)?.hash ?? '';
  if (await anotherUrlHas(rpc, lowest)) {
    return {
      kind: 'disagreement',
      blockNumber: lowest.blockNumber,
      storedHash: lowest.blockHash,
      chainHash,
    };
  }

  let highestStored = cursor.blockNumber;
  for (const s of stored) if (s.blockNumber > highestStored) highestStored = s.blockNumber;
  const goodBelow = matched
    .filter((m) => m.blockNumber < lowest.blockNumber)
    .reduce<bigint | null>((a, b) => (a === null || b.blockNumber > a ? b.blockNumber : a), null);
  let target = lowest.blockNumber - BigInt(reorgWindow);
  if (goodBelow !== null && goodBelow > target) target = goodBelow;
  if (target < 0n) target = 0n;
  const targetHeader = goodBelow === target ? headers.get(target) : await getBlockHeader(rpc.client, target);
  if (!targetHeader) return { kind: 'node_behind', blockNumber: target };
  return {
    kind: 'reorg',
    lowestBlock: lowest.blockNumber,
    depth: Number(highestStored - lowest.blockNumber + 1n),
    mismatched,
    rewindTo: { blockNumber: target, blockHash: targetHeader.hash },
  };
}

/** Whether any single URL still shows the stored hash (only asked when there is more than one URL). */
async function anotherUrlHas(rpc: ChainRpc, block: StoredBlock): Promise<boolean> {
  if (rpc.perUrl.length < 2) return false;
  const answers = await Promise.allSettled(rpc.perUrl.map((c) => getBlockHeader(c, block.blockNumber)));
  return answers.some(
    (a) => a.status === 'fulfilled' && a.value !== null && a.value.hash === block.blockHash.toLowerCase(),
  );
}

export interface OrphanedRow {
  id: bigint;
  source: 'logs' | 'receipt';
  txHash: `0x${string}`;
  /** The row was `final` when the reorg orphaned it: its block had been treated as final. */
  wasFinal: boolean;
}

/**
 * A reorg beyond finality: it orphaned rows already `final` (the settlement may have booked them),
 * or its visible depth exceeds the chain's finality depth. Recorded as a critical
 * `reorg_beyond_finality` finding with the orphaning, and loudly logged and counted by the caller.
 */
export interface BeyondFinality {
  chainId: number;
  lowestBlock: bigint;
  depth: number;
  finalityDepth: number;
  finalOrphaned: number;
  orphaned: number;
}

export interface AppliedReorg {
  rows: OrphanedRow[];
  beyondFinality: BeyondFinality | null;
}

/**
 * In one transaction: every non-orphaned transfer stored with a replaced block hash becomes
 * orphaned (never deleted), the cursor moves back to a block the chain still has, and a reorg
 * beyond finality (`finalityDepth`: the chain's) is recorded as a finding. One transaction, so
 * a crash never orphans final rows without the finding (the next pass would not see them again).
 */
export async function applyReorg(
  db: Db,
  chainId: number,
  reorg: Extract<ReorgCheck, { kind: 'reorg' }>,
  seen: { headBlock: bigint; finalizedBlock: bigint },
  now: Date,
  finalityDepth: number,
): Promise<AppliedReorg> {
  const hashes = [...new Set(reorg.mismatched.map((m) => m.blockHash.toLowerCase()))];
  return db.transaction(async (tx) => {
    const { rows } = await tx.execute<{
      id: string;
      source: 'logs' | 'receipt';
      tx_hash: string;
      was: string;
    }>(sql`
      with hit as (
        select id, state from chain_transfers
        where chain_id = ${chainId} and state <> 'orphaned'
          and block_hash in (${sql.join(
            hashes.map((h) => sql`${h}`),
            sql`, `,
          )})
        for update)
      update chain_transfers t set state = 'orphaned', orphaned_at = ${now.toISOString()}::timestamptz
      from hit where t.id = hit.id
      returning t.id::text, t.source, t.tx_hash, hit.state as was`);
    await writeCursor(tx, chainId, { ...reorg.rewindTo, ...seen });
    const orphaned = rows.map((r) => ({
      id: BigInt(r.id),
      source: r.source,
      txHash: r.tx_hash as `0x${string}`,
      wasFinal: r.was === 'final',
    }));
    const finalOrphaned = orphaned.filter((r) => r.wasFinal).length;
    if (finalOrphaned === 0 && reorg.depth <= finalityDepth) return { rows: orphaned, beyondFinality: null };
    const beyondFinality: BeyondFinality = {
      chainId,
      lowestBlock: reorg.lowestBlock,
      depth: reorg.depth,
      finalityDepth,
      finalOrphaned,
      orphaned: orphaned.length,
    };
    await recordFinding(
      tx,
      {
        kind: 'reorg_beyond_finality',
        severity: 'critical',
        ref: { type: 'block', id: `${chainId}:${reorg.lowestBlock}` },
        details: {
          chain_id: chainId,
          lowest_block: reorg.lowestBlock.toString(),
          depth: reorg.depth,
          finality_depth: finalityDepth,
          final_orphaned: finalOrphaned,
          orphaned: orphaned.length,
          rewound_to: reorg.rewindTo.blockNumber.toString(),
        },
      },
      null,
    );
    return { rows: orphaned, beyondFinality };
  });
}
