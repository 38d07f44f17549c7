import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { receiptTransfers, storeReceiptTransfers } from '../../../src/chain/receiptTransfers.ts';
import { type RpcProxy, startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit } from './indexerKit.ts';

/**
 * What a pass asks the node (docs/decisions.md, "Indexer RPC economy"): the cursor block's hash
 * vouches for everything read below it, so a quiet pass reads two blocks and a pass with new
 * blocks five requests, however many stored blocks the reorg window holds; a reorg is still found,
 * and receipt rows the cursor does not vouch for are still checked.
 */
const kit = await createIndexerKit('index_economy');
const { chain } = kit;
const reorg = (depth: number) => kit.raw('anvil_reorg', [depth, []]);
const buyer = await chain.wallet('buyer:e');
await chain.mint('USDC', buyer, 1_000_000n);

async function withProxy<T>(fn: (proxy: RpcProxy) => Promise<T>): Promise<T> {
  const proxy = await startRpcProxy(kit.anvil.rpcUrl);
  try {
    return await fn(proxy);
  } finally {
    await proxy.close();
  }
}

/** A block-number parameter as the proxy saw it: a number, or the tag. */
const blockParam = (p: unknown[]) =>
  typeof p[0] === 'string' && p[0].startsWith('0x') ? BigInt(p[0]) : p[0];

/** A node whose logs carry no blockTimestamp (older geth, many providers). */
async function startNoTimestampNode(
  target: string,
): Promise<{ url: string; blocksRead: unknown[]; close(): Promise<void> }> {
  const blocksRead: unknown[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const sent = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    for (const item of (Array.isArray(sent) ? sent : [sent]) as { method: string; params: unknown[] }[]) {
      if (item.method === 'eth_getBlockByNumber') blocksRead.push(blockParam(item.params));
    }
    const upstream = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat(chunks),
    });
    const body = (await upstream.json()) as unknown;
    const strip = (item: { result?: unknown }) => {
      if (Array.isArray(item.result)) {
        for (const l of item.result)
          if (l && typeof l === 'object') delete (l as Record<string, unknown>).blockTimestamp;
      }
      return item;
    };
    const out = Array.isArray(body) ? body.map(strip) : strip(body as { result?: unknown });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    blocksRead,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('transfer indexer: RPC economy', () => {
  it('behavior: a quiet pass reads two blocks and a pass with new blocks five requests, whatever the window holds', async () => {
    // Ten stored blocks with transfers, all inside the reorg window (64 blocks).
    for (let i = 0; i < 10; i++) await chain.transfer('USDC', 'buyer:e', kit.merchant, BigInt(i + 1));
    await indexChainPass(kit.deps(), CHAIN_ID);
    const cursor = await kit.cursor();
    await withProxy(async (proxy) => {
      const quiet = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      expect(quiet).toMatchObject({ fromBlock: null, lag: 0 });
      expect(proxy.calls.map((c) => [c.method, blockParam(c.params)])).toEqual([
        ['eth_getBlockByNumber', 'latest'],
        ['eth_getBlockByNumber', BigInt(cursor!.block_number)],
      ]);

      proxy.calls.length = 0;
      const paid = await chain.transfer('USDC', 'buyer:e', kit.merchant, 99n);
      await chain.mine(2);
      const busy = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      expect(busy.transfersFound).toBe(1);
      const head = await kit.head();
      expect(
        proxy.calls.map((c) => [c.method, c.method === 'eth_getLogs' ? 'logs' : blockParam(c.params)]),
      ).toEqual([
        ['eth_getBlockByNumber', 'latest'],
        ['eth_getBlockByNumber', BigInt(cursor!.block_number)],
        ['eth_getLogs', 'logs'],
        ['eth_getLogs', 'logs'],
        ['eth_getBlockByNumber', head], // the end block again; the log's time came with the log
      ]);
      const row = (await kit.rows()).find((r) => r.tx_hash === paid.txHash);
      expect(row).toMatchObject({ block_hash: paid.blockHash, state: 'final' });
    });
  });

  it('behavior: logs without blockTimestamp: the headers of their blocks give the time, checked against the log', async () => {
    const paid = await chain.transfer('USDC', 'buyer:e', kit.merchant, 7n);
    await chain.mine(1);
    const node = await startNoTimestampNode(kit.anvil.rpcUrl);
    try {
      await indexChainPass(kit.deps([node.url]), CHAIN_ID);
      expect(node.blocksRead).toContain(paid.blockNumber);
    } finally {
      await node.close();
    }
    const { rows } = await kit.db.db.execute<{ seconds: string }>(
      sql`select extract(epoch from block_time)::bigint::text as seconds from chain_transfers
          where tx_hash = ${paid.txHash}`,
    );
    const block = (await kit.raw('eth_getBlockByNumber', [`0x${paid.blockNumber.toString(16)}`, false])) as {
      timestamp: string;
    };
    expect(rows[0]?.seconds).toBe(BigInt(block.timestamp).toString());
  });

  it('behavior: a reorg whose fork point is below a stored transfer is found from the cursor block, then walked', async () => {
    const deps = kit.deps();
    await chain.mine(3); // the blocks just below `gone` hold nothing stored
    await indexChainPass(deps, CHAIN_ID);
    const gone = await chain.transfer('USDC', 'buyer:e', kit.merchant, 11n);
    await chain.mine(5);
    await indexChainPass(deps, CHAIN_ID);
    const cursorBefore = await kit.cursor();
    expect(BigInt(cursorBefore!.block_number)).toBe(gone.blockNumber + 5n);

    await reorg(8); // from two blocks below `gone` up to the cursor
    await withProxy(async (proxy) => {
      const outcome = await indexChainPass(kit.deps([proxy.url]), CHAIN_ID, { maxRanges: 0 });
      expect(outcome).toMatchObject({ orphaned: 1, reorgDepth: 6 });
      // The first round was the head and the cursor block: the cursor's changed hash led to the walk.
      expect(proxy.calls.slice(0, 2).map((c) => blockParam(c.params))).toEqual([
        'latest',
        BigInt(cursorBefore!.block_number),
      ]);
    });
    expect((await kit.rows()).find((r) => r.tx_hash === gone.txHash)?.state).toBe('orphaned');
    const cursor = await kit.cursor();
    expect(BigInt(cursor!.block_number)).toBeLessThan(gone.blockNumber);
    expect(cursor!.block_hash).toBe(await kit.blockHash(BigInt(cursor!.block_number)));
    await indexChainPass(deps, CHAIN_ID);
    expect((await kit.cursor())?.block_number).toBe(String(await kit.head()));
  });

  it('behavior: a receipt row below an unchanged cursor, in a block no log vouches for, is still checked', async () => {
    const deps = kit.deps();
    const stranger = await chain.wallet('stranger:e');
    const sent = await chain.transfer('USDC', 'buyer:e', stranger, 3n); // no watched wallet: no log row
    await chain.mine(1);
    await indexChainPass(deps, CHAIN_ID);
    const receipt = await receiptTransfers(deps.rpc, kit.registry, CHAIN_ID, sent.txHash);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    // As if the receipt had been read from a block that left the chain before the indexer got there.
    const forked = `0x${'cd'.repeat(32)}` as const;
    await storeReceiptTransfers(
      kit.db.db,
      receipt.transfers.map((t) => ({ ...t, blockHash: forked })),
    );
    const outcome = await indexChainPass(deps, CHAIN_ID, { maxRanges: 0 });
    expect(outcome.orphaned).toBe(1);
    const rows = (await kit.rows()).filter((r) => r.tx_hash === sent.txHash);
    expect(rows.find((r) => r.block_hash === forked)?.state).toBe('orphaned');
  });

  it('behavior: a verified transaction whose block left the chain is re-read when the cursor passes it, not made final', async () => {
    const deps = kit.deps();
    await indexChainPass(deps, CHAIN_ID);
    const stranger = await chain.wallet('stranger:e2');
    const sent = await chain.transfer('USDC', 'buyer:e', stranger, 4n); // above the cursor
    const receipt = await receiptTransfers(deps.rpc, kit.registry, CHAIN_ID, sent.txHash);
    if (receipt.status !== 'success') throw new Error('expected a receipt');
    await storeReceiptTransfers(kit.db.db, receipt.transfers);
    const rawTx = (await kit.raw('eth_getRawTransactionByHash', [sent.txHash])) as string;
    await reorg(1);
    await kit.raw('eth_sendRawTransaction', [rawTx]);
    await chain.mine(3);

    // This pass reads past the old block and makes it final-deep in one go.
    const outcome = await indexChainPass(deps, CHAIN_ID);
    expect(outcome.skipped).toBeUndefined();
    expect(outcome.orphaned).toBe(1);
    const rows = (await kit.rows()).filter((r) => r.tx_hash === sent.txHash);
    expect(rows.map((r) => [r.block_hash === sent.blockHash, r.state])).toEqual([
      [true, 'orphaned'],
      [false, 'final'],
    ]);
    expect(rows[1]?.block_hash).toBe(await kit.blockHash(BigInt(rows[1]!.block_number)));
  });
});
