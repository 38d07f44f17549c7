import { sql } from 'drizzle-orm';
import { type Address, createPublicClient, createWalletClient, http, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { tryIndexerLock } from '../../../src/chain/indexerLock.ts';
import { receiptTransfers, storeReceiptTransfers } from '../../../src/chain/receiptTransfers.ts';
import { watchedWallets } from '../../../src/chain/watchedWallets.ts';
import {
  sandboxTokenAbi,
  sandboxTokenBytecode,
} from '../../../src/sandbox/chain/contracts/sandboxTokenArtifact.ts';
import { startRpcProxy } from '../../helpers/rpcProxy.ts';
import { CHAIN_ID, createIndexerKit, metricValue } from './indexerKit.ts';

const kit = await createIndexerKit('index_chain');
const { chain } = kit;
const lower = (a: string) => a.toLowerCase();

/** A third ERC-20, not in the registry: its Transfer logs are never money. */
async function deployOtherToken(): Promise<{
  address: Address;
  mint(to: Address, amount: bigint): Promise<void>;
}> {
  // anvil's second pre-funded account, so nonces never collide with the sandbox's deployer.
  const account = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
  const chainDef = {
    id: CHAIN_ID,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [kit.anvil.rpcUrl] } },
  } as const;
  const wallet = createWalletClient({ account, chain: chainDef, transport: http(kit.anvil.rpcUrl) });
  const client = createPublicClient({ chain: chainDef, transport: http(kit.anvil.rpcUrl) });
  const hash = await wallet.deployContract({
    abi: sandboxTokenAbi,
    bytecode: sandboxTokenBytecode,
    args: ['Other', 'OTH', 6],
  });
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  const address = receipt.contractAddress!;
  return {
    address,
    async mint(to, amount) {
      const h = await wallet.writeContract({
        address,
        abi: sandboxTokenAbi,
        functionName: 'mint',
        args: [to, amount],
      });
      await client.waitForTransactionReceipt({ hash: h, pollingInterval: 20 });
    },
  };
}

describe('transfer indexer: one pass', () => {
  it('behavior: stores transfers into and out of watched wallets of both tokens, and nothing else', async () => {
    const deps = kit.deps();
    const buyer = await chain.wallet('buyer:1');
    const stranger = await chain.wallet('stranger:1');
    await chain.mint('USDC', buyer, 1_000n);
    await chain.mint('USDT', buyer, 1_000n);
    const intoMerchant = await chain.transfer('USDC', 'buyer:1', kit.merchant, 10n);
    const intoCustody = await chain.transfer('USDT', 'buyer:1', kit.custody, 20n);
    const outOfMerchant = await chain.transfer('USDC', 'merchant:st_a', stranger, 3n);
    await chain.transfer('USDT', 'buyer:1', stranger, 1n); // between unwatched wallets
    const other = await deployOtherToken();
    await other.mint(kit.merchant, 99n); // into a watched wallet, but not an accepted token

    const outcome = await indexChainPass(deps, CHAIN_ID);
    expect(outcome.skipped).toBeUndefined();
    expect(outcome.transfersFound).toBe(3);
    expect(outcome.fromBlock).toBe(0n);
    expect(outcome.toBlock).toBe(await kit.head());
    expect(outcome.lag).toBe(0);

    const rows = await kit.rows();
    expect(rows.map((r) => [r.tx_hash, r.token, r.from_address, r.to_address, r.value, r.source])).toEqual([
      [
        intoMerchant.txHash,
        lower(chain.tokens.USDC.address),
        lower(buyer),
        lower(kit.merchant),
        '10',
        'logs',
      ],
      [intoCustody.txHash, lower(chain.tokens.USDT.address), lower(buyer), lower(kit.custody), '20', 'logs'],
      [
        outOfMerchant.txHash,
        lower(chain.tokens.USDC.address),
        lower(kit.merchant),
        lower(stranger),
        '3',
        'logs',
      ],
    ]);
    expect(rows[0]?.block_hash).toBe(intoMerchant.blockHash);
    expect(rows[0]?.block_number).toBe(String(intoMerchant.blockNumber));
    const head = await kit.head();
    expect(await kit.cursor()).toEqual({ block_number: String(head), block_hash: await kit.blockHash(head) });
    expect(await metricValue(deps.metrics, 'stablebooks_chain_transfers_indexed_total')).toBe(3);
    expect(await metricValue(deps.metrics, 'stablebooks_chain_lag_blocks')).toBe(0);
    // The pass's wall time, which ChainStalled compares with Prometheus' time().
    const lastPass = await metricValue(deps.metrics, 'stablebooks_chain_last_pass_timestamp_seconds');
    expect(Math.abs(lastPass - Date.now() / 1000)).toBeLessThan(60);

    // Depth 2: the last two blocks are pending; two more blocks make everything final.
    await chain.mine(2);
    const again = await indexChainPass(deps, CHAIN_ID);
    expect(again.transfersFound).toBe(0);
    expect((await kit.rows()).map((r) => r.state)).toEqual(['final', 'final', 'final']);
  });

  it('behavior: watched wallets are the stores’ merchant and custody wallets plus learnt pools', async () => {
    const wallets = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID);
    const custody = wallets.find((w) => w.role === 'custody');
    expect(custody).toEqual({ address: lower(kit.custody), role: 'custody', storeIds: ['st_a', 'st_b'] });
    expect(wallets.filter((w) => w.role === 'merchant').map((w) => w.storeIds)).toEqual([['st_a'], ['st_b']]);
    expect(await watchedWallets(kit.db.db, { stores: kit.stores }, 1)).toEqual([]);
  });

  it('behavior: a claim-link pool learnt after its transfers is caught up from its from_block', async () => {
    const deps = kit.deps();
    const pool = await chain.wallet('pool:link_1');
    await chain.mint('USDC', kit.custody, 50n);
    const funded = await chain.transfer('USDC', 'custody:biz_1', pool, 5n); // custody is watched already
    await chain.mint('USDT', pool, 7n); // only the pool makes this one interesting
    await indexChainPass(deps, CHAIN_ID);
    expect((await kit.rows()).filter((r) => r.to_address === lower(pool)).length).toBe(1);

    await kit.db.db.execute(sql`
      insert into chain_watched_wallets (chain_id, address, role, store_id, claim_link_id, from_block)
      values (${CHAIN_ID}, ${lower(pool)}, 'pool', 'st_a', 'link_1', ${String(funded.blockNumber)})`);
    const wallets = await watchedWallets(kit.db.db, { stores: kit.stores }, CHAIN_ID);
    expect(wallets.find((w) => w.role === 'pool')).toEqual({
      address: lower(pool),
      role: 'pool',
      storeIds: ['st_a'],
      claimLinkId: 'link_1',
    });
    const outcome = await indexChainPass(deps, CHAIN_ID);
    expect(outcome.transfersFound).toBe(1);
    const intoPool = (await kit.rows()).filter((r) => r.to_address === lower(pool));
    expect(intoPool.map((r) => [r.token, r.value])).toEqual([
      [lower(chain.tokens.USDC.address), '5'],
      [lower(chain.tokens.USDT.address), '7'],
    ]);
    const { rows } = await kit.db.db.execute<{ caught_up: boolean }>(
      sql`select caught_up from chain_watched_wallets where address = ${lower(pool)}`,
    );
    expect(rows[0]?.caught_up).toBe(true);
  });

  it('behavior: two concurrent passes of one chain: one runs, the other skips', async () => {
    await chain.transfer('USDC', 'buyer:1', kit.merchant, 1n);
    const proxy = await startRpcProxy(kit.anvil.rpcUrl, { delayMs: 150 });
    try {
      const slow = indexChainPass(kit.deps([proxy.url]), CHAIN_ID);
      await new Promise((r) => setTimeout(r, 50));
      const fast = await indexChainPass(kit.deps(), CHAIN_ID);
      expect(fast.skipped).toBe('locked');
      const done = await slow;
      expect(done.skipped).toBeUndefined();
      expect(done.transfersFound).toBe(1);
    } finally {
      await proxy.close();
    }
    // And across processes: a lock held elsewhere makes the pass skip; released, it runs.
    const held = await tryIndexerLock(kit.db.pool, CHAIN_ID);
    expect(held).not.toBeNull();
    expect((await indexChainPass(kit.deps(), CHAIN_ID)).skipped).toBe('locked');
    await held?.release();
    expect((await indexChainPass(kit.deps(), CHAIN_ID)).skipped).toBeUndefined();
  });
});

describe('single-transaction verification', () => {
  it('behavior: a mined transfer: success with its Transfer logs, of any contract', async () => {
    const deps = kit.deps();
    const stranger = await chain.wallet('stranger:2');
    const sent = await chain.transfer('USDT', 'buyer:1', stranger, 5n);
    const r = await receiptTransfers(deps.rpc, kit.registry, CHAIN_ID, sent.txHash);
    expect(r.status).toBe('success');
    if (r.status !== 'success') return;
    expect(r.blockNumber).toBe(sent.blockNumber);
    expect(r.blockHash).toBe(sent.blockHash);
    expect(r.blockTime).toBeInstanceOf(Date);
    expect(r.transfers).toEqual([
      {
        chainId: CHAIN_ID,
        txHash: sent.txHash,
        logIndex: sent.logIndex,
        blockNumber: sent.blockNumber,
        blockHash: sent.blockHash,
        tokenAddress: lower(chain.tokens.USDT.address),
        from: lower(await chain.wallet('buyer:1')),
        to: lower(stranger),
        amount: 5n,
        occurredAt: r.blockTime,
      },
    ]);
    const ids = await storeReceiptTransfers(kit.db.db, r.transfers);
    expect(ids.length).toBe(1);
    expect(await storeReceiptTransfers(kit.db.db, r.transfers)).toEqual([]); // on conflict do nothing
    const stored = (await kit.rows()).find((row) => row.tx_hash === sent.txHash);
    expect(stored).toMatchObject({ source: 'receipt', state: 'pending', value: '5' });
  });

  it('behavior: an unknown hash is not_found', async () => {
    const deps = kit.deps();
    const r = await receiptTransfers(deps.rpc, kit.registry, CHAIN_ID, keccak256(toHex('no such tx')));
    expect(r).toEqual({ status: 'not_found' });
  });
});
