import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { receiptTransfers, storeReceiptTransfers } from '../../../src/chain/receiptTransfers.ts';
import { startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit, metricValue } from './indexerKit.ts';

/** Reorgs (docs/accounting.md, rule 3) on a real anvil: anvil_reorg replaces the last blocks. */
const kit = await createIndexerKit('index_reorg');
const { chain } = kit;
/**
 * anvil_reorg directly: SandboxChain.reorg checks the depth against viem's getBlockNumber, which
 * viem caches for a few seconds, so right after a few fast blocks it sees an old head and refuses.
 */
const reorg = (depth: number) => kit.raw('anvil_reorg', [depth, []]);

/** The open reorg_beyond_finality findings. */
async function beyondFinality() {
  const { rows } = await kit.db.db.execute<{ ref_id: string; severity: string; details: unknown }>(
    sql`select ref_id, severity, details from findings
        where kind = 'reorg_beyond_finality' and resolved_at is null order by id`,
  );
  return rows;
}

await chain.mint('USDC', await chain.wallet('buyer:r'), 1_000_000n);
await chain.mine(5);

describe('transfer indexer: reorgs', () => {
  it('behavior: a reorg of depth 3 after finality orphans the replaced transfers; the re-sent tx is final again', async () => {
    const deps = kit.deps();
    const early = await chain.transfer('USDC', 'buyer:r', kit.merchant, 1n); // stays: below the reorg
    await chain.mine(3);
    const paid = await chain.transfer('USDC', 'buyer:r', kit.merchant, 25n);
    await chain.mine(2); // depth 2: `paid` is final now
    await indexChainPass(deps, CHAIN_ID);
    const rowsBefore = await kit.rows();
    expect(rowsBefore.filter((r) => r.to_address === kit.merchant.toLowerCase()).map((r) => r.state)).toEqual(
      ['final', 'final'],
    );
    const cursorBefore = await kit.cursor();
    const rawTx = (await kit.raw('eth_getRawTransactionByHash', [paid.txHash])) as string;

    await reorg(3); // replaces paid's block and the two above it
    expect(await kit.blockHash(paid.blockNumber)).not.toBe(paid.blockHash);
    // maxRanges 0: this pass only checks hashes, so the rewound cursor can be seen.
    const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 0 });
    expect(outcome).toMatchObject({ orphaned: 1, reorgDepth: 3, transfersFound: 0 });
    expect(outcome.skipped).toBeUndefined();

    const rows = await kit.rows();
    expect(rows.find((r) => r.tx_hash === paid.txHash)).toMatchObject({
      state: 'orphaned',
      block_hash: paid.blockHash,
    });
    expect(rows.find((r) => r.tx_hash === early.txHash)?.state).toBe('final');
    const cursor = await kit.cursor();
    expect(BigInt(cursor!.block_number)).toBeLessThan(BigInt(cursorBefore!.block_number));
    expect(BigInt(cursor!.block_number)).toBeGreaterThanOrEqual(early.blockNumber); // the last known-good block
    expect(cursor!.block_hash).toBe(await kit.blockHash(BigInt(cursor!.block_number)));
    expect(await metricValue(deps.metrics, 'stablebooks_chain_reorgs_total')).toBe(1);
    expect(
      await metricValue(
        deps.metrics,
        'stablebooks_chain_reorg_depth',
        {},
        'stablebooks_chain_reorg_depth_sum',
      ),
    ).toBe(3);
    expect(kit.logLines.some((l) => l.includes('reorg: transfers of replaced blocks orphaned'))).toBe(true);
    // The orphaned row was final: a reorg beyond finality, said loudly (finding, metric, error log).
    expect(await beyondFinality()).toEqual([
      {
        ref_id: `${CHAIN_ID}:${paid.blockNumber}`,
        severity: 'critical',
        details: {
          chain_id: CHAIN_ID,
          lowest_block: String(paid.blockNumber),
          depth: 3,
          finality_depth: 2,
          final_orphaned: 1,
          orphaned: 1,
          rewound_to: cursor!.block_number,
        },
      },
    ]);
    expect(await metricValue(deps.metrics, 'stablebooks_chain_reorgs_beyond_finality_total')).toBe(1);
    expect(kit.logLines.some((l) => l.includes('reorg beyond finality'))).toBe(true);

    // Reading again from there finds nothing new: the replaced blocks are empty.
    const reread = await indexChainPass(deps, CHAIN_ID);
    expect(reread).toMatchObject({ transfersFound: 0, toBlock: BigInt(cursorBefore!.block_number), lag: 0 });
    expect(reread.reorgDepth).toBeUndefined();

    // The same signed transaction lands again, in a new block: a new inclusion, a new row.
    await kit.raw('eth_sendRawTransaction', [rawTx]);
    const again = await indexChainPass(deps, CHAIN_ID);
    expect(again.transfersFound).toBe(1);
    await chain.mine(2);
    await indexChainPass(deps, CHAIN_ID);
    const inclusions = (await kit.rows()).filter((r) => r.tx_hash === paid.txHash);
    expect(inclusions.map((r) => r.state)).toEqual(['orphaned', 'final']);
    expect(inclusions[1]?.block_hash).not.toBe(paid.blockHash);
    expect(inclusions[1]?.block_hash).toBe(await kit.blockHash(BigInt(inclusions[1]!.block_number)));
  });

  it('behavior: a reorg within finality orphans pending rows quietly: no reorg_beyond_finality', async () => {
    const deps = kit.deps();
    await indexChainPass(deps, CHAIN_ID);
    const findingsBefore = (await beyondFinality()).length;
    const pending = await chain.transfer('USDC', 'buyer:r', kit.merchant, 3n);
    await chain.mine(1); // depth 2 with its own block: not final yet
    await indexChainPass(deps, CHAIN_ID);
    expect((await kit.rows()).find((r) => r.tx_hash === pending.txHash)?.state).toBe('pending');

    await reorg(2);
    const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 0 });
    expect(outcome.orphaned).toBe(1);
    expect(outcome.reorgDepth).toBeLessThanOrEqual(2);
    expect((await beyondFinality()).length).toBe(findingsBefore);
    expect(await metricValue(deps.metrics, 'stablebooks_chain_reorgs_beyond_finality_total')).toBe(0);
    await indexChainPass(deps, CHAIN_ID);
  });

  it('behavior: two URLs that disagree about a stored block: counted, not a reorg', async () => {
    await chain.transfer('USDC', 'buyer:r', kit.merchant, 2n);
    await indexChainPass(kit.deps(), CHAIN_ID);
    const before = await kit.rows();
    const cursor = await kit.cursor();
    const proxy = await startRpcProxy(kit.anvil.rpcUrl);
    try {
      proxy.set({ fakeHashes: new Map([[BigInt(cursor!.block_number), `0x${'ab'.repeat(32)}`]]) });
      const deps = kit.deps([proxy.url, kit.anvil.rpcUrl]);
      const outcome = await indexChainPass(deps, CHAIN_ID);
      expect(outcome).toMatchObject({ skipped: 'node_disagreement', orphaned: 0 });
      expect(await metricValue(deps.metrics, 'stablebooks_chain_node_disagreements_total')).toBe(1);
      expect(await metricValue(deps.metrics, 'stablebooks_chain_reorgs_total')).toBe(0);
      expect(kit.logLines.some((l) => l.includes('RPC nodes disagree'))).toBe(true);
    } finally {
      await proxy.close();
    }
    await indexChainPass(kit.deps(), CHAIN_ID);
    expect((await kit.rows()).map((r) => [r.tx_hash, r.state])).toEqual(
      before.map((r) => [r.tx_hash, r.state]),
    );
    expect(await kit.cursor()).toEqual(cursor);
  });

  it('behavior: a verified transaction ahead of the cursor is re-read by receipt before it becomes final', async () => {
    const deps = kit.deps();
    await indexChainPass(deps, CHAIN_ID);
    const stranger = await chain.wallet('stranger:r');
    const sent = await chain.transfer('USDC', 'buyer:r', stranger, 9n); // no watched wallet: only a receipt knows it
    const receipt = await receiptTransfers(deps.rpc, kit.registry, CHAIN_ID, sent.txHash);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    await storeReceiptTransfers(kit.db.db, receipt.transfers);
    const rawTx = (await kit.raw('eth_getRawTransactionByHash', [sent.txHash])) as string;
    await reorg(1);
    await kit.raw('eth_sendRawTransaction', [rawTx]);
    await chain.mine(3);

    // No logs read this pass: the cursor stays below the verified block, so finality asks the receipt.
    const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 0 });
    expect(outcome.orphaned).toBe(1);
    const rows = (await kit.rows()).filter((r) => r.tx_hash === sent.txHash);
    expect(rows.map((r) => [r.source, r.state])).toEqual([
      ['receipt', 'orphaned'],
      ['receipt', 'final'],
    ]);
    expect(rows[0]?.block_hash).toBe(sent.blockHash);
    expect(rows[1]?.block_hash).toBe(await kit.blockHash(BigInt(rows[1]!.block_number)));
  });
});
