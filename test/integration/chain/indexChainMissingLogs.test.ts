import { sql } from 'drizzle-orm';
import { createPublicClient, http, type PublicClient } from 'viem';
import { describe, expect, it } from 'vitest';
import { readCursor, writeCursor } from '../../../src/chain/chainCursor.ts';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { readTransferRange } from '../../../src/chain/readTransferRange.ts';
import { createManualClock } from '../../../src/clock.ts';
import { balances } from '../../../src/ledger/balances.ts';
import { settleTransfers } from '../../../src/settlement/settleTransfers.ts';
import { type RpcProxy, startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit, metricValue } from './indexerKit.ts';

/**
 * eth_getLogs answers that are missing logs, as from a lagging fallback or one node behind a load
 * balancer: the end block's hash checks out, but the answer is null or leaves transfers out. A
 * null is an error (the range is read again); logs left out near the head are found by the
 * re-read of each range once it is final (docs/decisions.md, "Re-read logs at finality").
 * The kit's chain is final at depth 2.
 */
const kit = await createIndexerKit('index_missing_logs');
const { chain } = kit;
const clock = createManualClock(new Date());
const GRACE = 60_000;
const buyer = await chain.wallet('buyer:m');
await chain.mint('USDT', buyer, 1_000_000_000n);
await chain.mint('USDC', buyer, 1_000_000_000n);

async function withProxy<T>(fn: (proxy: RpcProxy) => Promise<T>): Promise<T> {
  const proxy = await startRpcProxy(kit.anvil.rpcUrl);
  try {
    return await fn(proxy);
  } finally {
    await proxy.close();
  }
}

/** Indexes up to the head straight from anvil. */
async function indexToHead(): Promise<void> {
  const outcome = await indexChainPass(kit.deps(), CHAIN_ID);
  expect(outcome.skipped).toBeUndefined();
  expect(outcome.lag).toBe(0);
}

async function rowOf(txHash: string) {
  return (await kit.rows()).find((r) => r.tx_hash === txHash);
}

/** The distinct [from, to] of the eth_getLogs requests seen, in order (each range is asked twice: from and to the wallets). */
function getLogsRanges(proxy: RpcProxy): [bigint, bigint][] {
  const seen = new Map<string, [bigint, bigint]>();
  for (const c of proxy.calls) {
    if (c.method !== 'eth_getLogs') continue;
    const f = c.params[0] as { fromBlock: string; toBlock: string };
    seen.set(`${f.fromBlock}-${f.toBlock}`, [BigInt(f.fromBlock), BigInt(f.toBlock)]);
  }
  return [...seen.values()];
}

async function usdt(kind: string): Promise<bigint> {
  let sum = 0n;
  for (const b of await balances(kit.db.db, { storeId: 'st_a' })) {
    if (b.symbol === 'USDT' && b.code.startsWith(`${kind}:`)) sum += b.balance;
  }
  return sum;
}

describe('transfer indexer: eth_getLogs answers with logs missing', () => {
  it('error: a null eth_getLogs answer is an error, not "no logs": the cursor stays and the next pass stores the transfer', async () => {
    await indexToHead();
    const cursor = await kit.cursor();
    const paid = await chain.transfer('USDC', 'buyer:m', kit.merchant, 5n); // at the head: not final
    await withProxy(async (proxy) => {
      // No retry inside the pass: the pass itself must refuse the answer.
      const deps = kit.deps([proxy.url], { retryDelayMs: 20, retryCount: 0, timeoutMs: 5_000 });
      proxy.set({ nullLogsNext: 2 }); // both getLogs of the range (from and to the wallets)
      const first = await indexChainPass(deps, CHAIN_ID);
      expect(first.skipped).toBe('rpc_error');
      expect(first.error).toMatch(/eth_getLogs.*null/);
      expect(await kit.cursor()).toEqual(cursor);
      expect(await rowOf(paid.txHash)).toBeUndefined();

      // The block is still above the final block: only reading the range again can find it.
      const second = await indexChainPass(deps, CHAIN_ID);
      expect(second).toMatchObject({ transfersFound: 1, recovered: 0 });
      expect(await rowOf(paid.txHash)).toMatchObject({ block_hash: paid.blockHash, state: 'pending' });
      expect((await kit.cursor())?.block_number).toBe(String(paid.blockNumber));
    });
  });

  it("error: readTransferRange refuses a null eth_getLogs answer from any client, not only the indexer's", async () => {
    await withProxy(async (proxy) => {
      const client = createPublicClient({ transport: http(proxy.url, { retryCount: 0 }) }) as PublicClient;
      const head = await kit.head();
      proxy.set({ nullLogsNext: 1 });
      await expect(
        readTransferRange(client, CHAIN_ID, [chain.tokens.USDC.address], [kit.merchant], head, head),
      ).rejects.toThrow(/eth_getLogs: the node answered null/);
    });
  });

  it('behavior: a fallback URL answering null for eth_getLogs is passed over for the next URL in the same pass', async () => {
    await indexToHead();
    const paid = await chain.transfer('USDC', 'buyer:m', kit.merchant, 6n);
    await withProxy(async (proxy) => {
      proxy.set({ nullLogsNext: Number.MAX_SAFE_INTEGER });
      const deps = kit.deps([proxy.url, kit.anvil.rpcUrl]);
      const outcome = await indexChainPass(deps, CHAIN_ID);
      expect(outcome.skipped).toBeUndefined();
      expect(outcome.transfersFound).toBe(1);
      expect(await rowOf(paid.txHash)).toMatchObject({ block_hash: paid.blockHash });
      expect(
        await metricValue(deps.metrics, 'stablebooks_rpc_requests_total', {
          method: 'eth_getLogs',
          outcome: 'error',
        }),
      ).toBeGreaterThan(0);
    });
  });

  it('behavior: a transfer left out of a getLogs answer near the head is stored once its block is final, and booked as a payment proof', async () => {
    await indexToHead();
    const paid = await chain.transfer('USDT', 'buyer:m', kit.merchant, 25_000_000n);
    const intent = await kit.confirmedIntent(paid.txHash, { coins: '25', observedAt: clock.now() });
    const inTransit = await usdt('assets:in_transit');
    const wallet = await usdt('assets:wallet');
    await withProxy(async (proxy) => {
      proxy.set({ omitLogsOf: new Map([[paid.txHash.toLowerCase(), 1]]) });
      const first = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      expect(first).toMatchObject({ transfersFound: 0, toBlock: paid.blockNumber });
      expect(proxy.behaviour.omitLogsOf.get(paid.txHash.toLowerCase())).toBe(0); // it was left out
      expect(await rowOf(paid.txHash)).toBeUndefined();

      await chain.mine(2); // the block is final now
      proxy.calls.length = 0;
      const secondDeps = kit.deps([proxy.url]);
      const second = await indexChainPass(secondDeps, CHAIN_ID);
      expect(second).toMatchObject({ transfersFound: 1, recovered: 1 });
      // Counted for operators: their RPC answers getLogs incompletely.
      expect(
        await metricValue(secondDeps.metrics, 'stablebooks_chain_transfers_recovered_total', {
          chain_id: String(CHAIN_ID),
        }),
      ).toBe(1);
      expect(await rowOf(paid.txHash)).toMatchObject({
        block_hash: paid.blockHash,
        state: 'final',
        source: 'logs',
      });
      // The re-read shared the new blocks' request: one range, from the block after the verified one.
      const ranges = getLogsRanges(proxy);
      expect(ranges).toHaveLength(1);
      expect(ranges[0]![0]).toBeLessThanOrEqual(paid.blockNumber);
      expect(ranges[0]![1]).toBe(paid.blockNumber + 2n);
      expect(proxy.calls.filter((c) => c.method === 'eth_getLogs')).toHaveLength(2);
      expect(proxy.calls).toHaveLength(5);
    });
    expect(
      kit.logLines.some((l) => l.includes('found transfers an earlier eth_getLogs answer had left out')),
    ).toBe(true);

    clock.set(new Date());
    expect(await settleTransfers(kit.applyDeps(clock, GRACE), CHAIN_ID)).toMatchObject({ applied: 1 });
    const { rows } = await kit.db.db.execute<{ matched_as: string; matched_ref: string }>(
      sql`select matched_as, matched_ref from chain_transfers where tx_hash = ${paid.txHash.toLowerCase()}`,
    );
    expect(rows).toEqual([{ matched_as: 'payment_proof', matched_ref: intent }]);
    expect(await usdt('assets:in_transit')).toBe(inTransit - 25_000_000n);
    expect(await usdt('assets:wallet')).toBe(wallet + 25_000_000n);
  });

  it('behavior: a re-read wider than one range is read in ranges of its own up to the final block, then the new blocks', async () => {
    await indexToHead();
    const tight = { initialRange: 2n, maxRange: 2n };
    const paid = await chain.transfer('USDC', 'buyer:m', kit.merchant, 7n);
    await withProxy(async (proxy) => {
      proxy.set({ omitLogsOf: new Map([[paid.txHash.toLowerCase(), 1]]) });
      await indexChainPass(kit.deps([proxy.url]), CHAIN_ID, tight);
      expect(await rowOf(paid.txHash)).toBeUndefined();
      await chain.mine(3);
      proxy.calls.length = 0;
      const outcome = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID, tight);
      expect(outcome).toMatchObject({ recovered: 1, lag: 0 });
      const ranges = getLogsRanges(proxy);
      expect(ranges.every(([a, b]) => b - a + 1n <= 2n)).toBe(true);
      // Every block from the first re-read one up to the head was read once this pass, in order.
      expect(ranges.at(-1)![1]).toBe(await kit.head());
      for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1] + 1n);
    });
    expect(await rowOf(paid.txHash)).toMatchObject({ state: 'final' });
  });

  it('behavior: blocks read while already final are not read again; only the blocks read above finality are', async () => {
    await indexToHead();
    const cursor = BigInt((await kit.cursor())!.block_number);
    await chain.mine(10);
    await withProxy(async (proxy) => {
      await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      const head = await kit.head();
      expect(getLogsRanges(proxy)[0]).toEqual([cursor - 1n, head]); // the two blocks above finality last pass
      const verified = (await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock;
      expect(verified).toBe(head - 2n);

      proxy.calls.length = 0;
      const quiet = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      expect(quiet.fromBlock).toBeNull();
      expect(getLogsRanges(proxy)).toEqual([]);

      await chain.mine(1);
      proxy.calls.length = 0;
      await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      expect(getLogsRanges(proxy)).toEqual([[head - 1n, head + 1n]]);
    });
  });

  it('behavior: rows from logs become final only up to the verified block: the matcher sees the transfers of a block once all are in', async () => {
    await indexToHead();
    const paid = await chain.transfer('USDC', 'buyer:m', kit.merchant, 8n);
    await indexChainPass(kit.deps(), CHAIN_ID);
    const before = await readCursor(kit.db.db, CHAIN_ID);
    await chain.mine(2);
    // No range read this pass: the block is final, but its logs were read only near the head.
    await indexChainPass(kit.deps(), CHAIN_ID, { maxRanges: 0 });
    expect(await rowOf(paid.txHash)).toMatchObject({ state: 'pending' });
    expect((await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock).toBe(before!.verifiedBlock);

    await indexChainPass(kit.deps(), CHAIN_ID);
    expect(await rowOf(paid.txHash)).toMatchObject({ state: 'final' });
    expect((await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock).toBeGreaterThanOrEqual(paid.blockNumber);
  });

  it('behavior: a cursor moved back takes the verified block with it; a row without one reads as verified to its finality', async () => {
    await indexToHead();
    const cursor = (await readCursor(kit.db.db, CHAIN_ID))!;
    const back = cursor.verifiedBlock - 3n;
    await writeCursor(kit.db.db, CHAIN_ID, {
      blockNumber: back,
      blockHash: await kit.blockHash(back),
      headBlock: cursor.headBlock!,
    });
    expect((await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock).toBe(back);

    await kit.db.db.execute(
      sql`update chain_cursors set verified_block = null, finalized_block = ${String(back - 1n)}::bigint`,
    );
    expect((await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock).toBe(back - 1n);
    await indexToHead();
    expect((await readCursor(kit.db.db, CHAIN_ID))!.verifiedBlock).toBe((await kit.head()) - 2n);
  });
});
