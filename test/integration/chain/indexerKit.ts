import { sql } from 'drizzle-orm';
import type { Address } from 'viem';
import { afterAll } from 'vitest';
import { type IndexerDeps, indexChainPass } from '../../../src/chain/indexChain.ts';
import { type ChainRpcOptions, createChainRpc } from '../../../src/chain/rpcClients.ts';
import type { Clock } from '../../../src/clock.ts';
import { type ChainRegistry, createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { StoreConfig } from '../../../src/config/stores.ts';
import { type EphemeralAnvil, rawRpc, startAnvil } from '../../../src/devservices/anvil.ts';
import { type AccountCache, createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { createMetrics, type Metrics } from '../../../src/metrics/metrics.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { createSandboxChain } from '../../../src/sandbox/chain/sandboxChain.ts';
import type { SandboxChain } from '../../../src/sandbox/chain/types.ts';
import type { SettlementDeps } from '../../../src/settlement/settlementDeps.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * One chain indexer under test: its own anvil with the sandbox's USDT and USDC (registered as the
 * chain's accepted tokens, final at depth 2), its own database, and one store whose merchant and
 * custody wallets are watched.
 */
export const CHAIN_ID = 31337;

export interface IndexerKit {
  anvil: EphemeralAnvil;
  chain: SandboxChain;
  registry: ChainRegistry;
  db: Awaited<ReturnType<typeof createMigratedDatabase>>;
  merchant: Address;
  custody: Address;
  stores: StoreConfig[];
  /** Log lines written by the indexers made with `deps`. */
  logLines: string[];
  /** Indexer dependencies over these RPC URLs (default: anvil itself), with fresh metrics. */
  deps(urls?: string[], options?: ChainRpcOptions): IndexerDeps & { metrics: Metrics };
  /** The ledger accounts cache the kit's matcher posts with (use it for entries of your own). */
  accounts: AccountCache;
  /** The matcher's dependencies over this kit's database and stores. */
  applyDeps(clock: Clock, unmatchedGraceMs: number): SettlementDeps;
  /**
   * Records a CONFIRMED direct payment of store st_a (no fee) paid by `txHash` to the merchant
   * wallet, as a poll would: `coins` of `token` (default 25 USDT); `net` is the reported net when
   * it should disagree with P - F (rule 1 then waits for the chain); `fee` the service fee (default
   * 0; above 0 the payment was routed through a temporary wallet). `txTo` names another wallet as
   * the payment's recipient (default: st_a's merchant wallet); `storeId` the store whose key read
   * it (default st_a); `id` the intent's id (default a new one: pass an earlier one to observe that
   * intent again). Returns the intent id.
   */
  confirmedIntent(
    txHash: string,
    options?: {
      coins?: string;
      token?: 'USDT' | 'USDC';
      net?: string;
      fee?: string;
      observedAt?: Date;
      txTo?: Address;
      storeId?: string;
      id?: string;
    },
  ): Promise<string>;
  rows(): Promise<TransferRowView[]>;
  /** The head, read fresh (the sandbox chain's headBlock() is cached by viem for a few seconds). */
  head(): Promise<bigint>;
  /** A block's hash, lowercase. */
  blockHash(n: bigint): Promise<string>;
  /** A raw JSON-RPC call to anvil. */
  raw(method: string, params: unknown[]): Promise<unknown>;
  /** Mines past the finality depth and runs `deps`' indexer until no stored row is pending. */
  indexUntilFinal(deps: IndexerDeps): Promise<void>;
  cursor(): Promise<{ block_number: string; block_hash: string } | undefined>;
}

export interface TransferRowView {
  tx_hash: string;
  log_index: number;
  block_number: string;
  block_hash: string;
  token: string;
  from_address: string;
  to_address: string;
  value: string;
  state: string;
  source: string;
}

export async function createIndexerKit(
  label: string,
  options: { depth?: number; reorgWindow?: number } = {},
): Promise<IndexerKit> {
  const anvil = await startAnvil({ chainId: CHAIN_ID });
  afterAll(() => anvil.stop());
  const db = await createMigratedDatabase(label);
  const chain = await createSandboxChain({ chainId: CHAIN_ID, rpcUrl: anvil.rpcUrl, seed: label });
  const registry = createChainRegistry([
    {
      chain_id: CHAIN_ID,
      name: 'anvil',
      tokens: {
        USDT: { address: chain.tokens.USDT.address, decimals: 6 },
        USDC: { address: chain.tokens.USDC.address, decimals: 6 },
      },
      finality: { finalized_tag: false, depth: options.depth ?? 2 },
      start_block: 0,
      ...(options.reorgWindow ? { reorg_window: options.reorgWindow } : {}),
    },
  ]);
  const merchant = await chain.wallet('merchant:st_a');
  const custody = await chain.wallet('custody:biz_1');
  const stores: StoreConfig[] = [
    {
      storeId: 'st_a',
      businessId: 'biz_1',
      apiKey: 'key_a',
      apiSecret: 'secret-a-0123456789',
      signedResponse: false,
      functionalCurrency: 'USD',
      par: new Map(),
      wallets: new Map([[CHAIN_ID, { merchant, custody }]]),
    },
    {
      storeId: 'st_b',
      businessId: 'biz_1',
      apiKey: 'key_b',
      apiSecret: 'secret-b-0123456789',
      signedResponse: false,
      functionalCurrency: 'USD',
      par: new Map(),
      wallets: new Map([[CHAIN_ID, { merchant: await chain.wallet('merchant:st_b'), custody }]]),
    },
  ];
  const raw = (method: string, params: unknown[]) => rawRpc(anvil.rpcUrl, method, params);
  const { logger, lines: logLines } = captureLogger();
  const accounts = createAccountCache();
  let intents = 0;
  const transferRows = async (): Promise<TransferRowView[]> => {
    const { rows } = await db.db.execute<TransferRowView & Record<string, unknown>>(sql`
      select tx_hash, log_index, block_number::text, block_hash, token, from_address, to_address, value::text,
        state, source
      from chain_transfers t order by t.block_number, t.log_index, t.id`);
    return rows;
  };
  return {
    anvil,
    chain,
    registry,
    db,
    merchant,
    custody,
    stores,
    logLines,
    accounts,
    applyDeps: (clock, unmatchedGraceMs) => ({
      db: db.db,
      config: { stores, chains: registry },
      accounts,
      clock,
      unmatchedGraceMs,
    }),
    async confirmedIntent(txHash, opts = {}) {
      const id = opts.id ?? `intent-${label}-${intents++}`;
      const coins = opts.coins ?? '25';
      const symbol = opts.token ?? 'USDT';
      const intent = {
        all_svc_checkout_intent_id: id,
        currency: null,
        currency_symbol: null,
        amount_cents: null,
        chain_id: CHAIN_ID,
        amount_coins: coins,
        coin_symbol: symbol,
        coin_contract: chain.tokens[symbol].address,
        currency_rate: null,
        status: 20,
        order_id: null,
        order_description: null,
        user_id: null,
        user_name: null,
        error_message: null,
        tx_hash: txHash,
        tx_hash_2: null,
        tx_from: null,
        tx_to: opts.txTo ?? merchant,
        actual_paid_amount: coins,
        service_fee_amount: opts.fee ?? '0',
        net_income_amount: opts.net ?? coins,
        payment_method_type: 1,
        accepted_stable_coins: 1,
      } as CheckoutIntent;
      await db.db.transaction((tx) =>
        applyIntentSnapshot(
          tx,
          { chains: registry, accounts, stores },
          {
            storeId: opts.storeId ?? 'st_a',
            intent,
            source: 'poll',
            observedAt: opts.observedAt ?? new Date(),
          },
        ),
      );
      return id;
    },
    deps(urls = [anvil.rpcUrl], rpcOptions = { retryDelayMs: 20, retryCount: 3, timeoutMs: 5_000 }) {
      const metrics = createMetrics();
      const info = registry.chain(CHAIN_ID)!;
      return {
        db: db.db,
        pool: db.pool,
        config: { stores, chains: registry },
        rpc: createChainRpc(info, urls, metrics, rpcOptions),
        metrics,
        logger,
      };
    },
    async indexUntilFinal(indexerDeps) {
      await raw('anvil_mine', ['0x3']);
      for (let i = 0; i < 5; i++) {
        await indexChainPass(indexerDeps, CHAIN_ID);
        if ((await transferRows()).every((r) => r.state !== 'pending')) return;
      }
      throw new Error('transfers not final');
    },
    rows: transferRows,
    head: async () => BigInt((await raw('eth_blockNumber', [])) as string),
    blockHash: async (n) =>
      (
        (await raw('eth_getBlockByNumber', [`0x${n.toString(16)}`, false])) as { hash: string }
      ).hash.toLowerCase(),
    raw,
    async cursor() {
      const { rows } = await db.db.execute<{ block_number: string; block_hash: string }>(sql`
        select block_number::text, block_hash from chain_cursors where chain_id = ${CHAIN_ID}`);
      return rows[0];
    },
  };
}

/** The sum of a metric's samples with these labels (for a histogram, pass its `_count` or `_sum` sample name), or 0. */
export async function metricValue(
  metrics: Metrics,
  name: string,
  labels: Record<string, string> = {},
  sample?: string,
): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get();
  // Histograms list their _bucket, _sum and _count samples under `metricName`.
  return ((metric?.values ?? []) as { value: number; labels: object; metricName?: string }[])
    .filter((v) => (sample ? v.metricName === sample : v.metricName === undefined || v.metricName === name))
    .filter((v) =>
      Object.entries(labels).every(([k, val]) => String((v.labels as Record<string, unknown>)[k]) === val),
    )
    .reduce((sum, v) => sum + v.value, 0);
}

/**
 * Replaces the kit's stores (what its indexer, matcher and intent observer read, in place) with
 * one store per id, each with its own merchant and custody wallet on the kit's chain.
 */
export async function useStores(kit: IndexerKit, storeIds: readonly string[]): Promise<void> {
  const storeOf = async (storeId: string): Promise<StoreConfig> => ({
    storeId,
    businessId: `biz_${storeId}`,
    apiKey: `key_${storeId}`,
    apiSecret: `secret-${storeId}-0123456789`,
    signedResponse: false,
    functionalCurrency: 'USD',
    par: new Map(),
    wallets: new Map([
      [
        CHAIN_ID,
        {
          merchant: await kit.chain.wallet(`merchant:${storeId}`),
          custody: await kit.chain.wallet(`custody:${storeId}`),
        },
      ],
    ]),
  });
  kit.stores.splice(0, kit.stores.length, ...(await Promise.all(storeIds.map(storeOf))));
}
