import { randomBytes } from 'node:crypto';
import { createChainRegistry } from '../config/chainRegistry.ts';
import { type Config, defaultHttpLimits } from '../config/loadConfig.ts';
import type { SandboxChain } from '../sandbox/chain/types.ts';

export interface SandboxDaemonConfigInput {
  databaseUrl: string;
  redisUrl: string;
  sandboxUrl: string;
  /** The daemon's HTTP port (the store's webhook URLs point at it). */
  port: number;
  /** The sandbox chain the daemon watches: its tokens, wallets and RPC URL. */
  chain: SandboxChain;
  store: { storeId: string; businessId: string; apiKey: string; apiSecret: string; signedResponse: boolean };
  /** Blocks below the head at which a transfer is final; absent: the registry's default for the chain. */
  finalityDepth?: number;
  reportsDir: string;
  queuePrefix: string;
  /** Factor on every poll and sweep interval: the service's pace scaled down so runs take seconds. */
  pollIntervalScale: number;
  adminToken?: string;
  /** Let the queue dashboard change jobs (ADMIN_WRITE). */
  adminWrite?: boolean;
  encryptionKey?: Buffer;
}

/**
 * The daemon's configuration for one store of a sandbox: what STORES_FILE, CHAINS_FILE and the
 * environment would say, built in code. The demo and the end-to-end tests run the daemon with it.
 */
export async function sandboxDaemonConfig(input: SandboxDaemonConfigInput): Promise<Config> {
  const { chain, store } = input;
  return {
    databaseUrl: input.databaseUrl,
    redisUrl: input.redisUrl,
    svcBaseUrl: input.sandboxUrl,
    port: input.port,
    // 0: a free port of its own (the demo and tests read the daemon's opsUrl).
    opsPort: 0,
    opsHost: '127.0.0.1',
    adminWrite: input.adminWrite ?? false,
    adminCookieSecure: 'auto',
    pgConnectTimeoutMs: 5_000,
    pgStatementTimeoutMs: 30_000,
    http: defaultHttpLimits,
    intakeQueueLimit: 5_000,
    logLevel: 'info',
    stores: [
      {
        ...store,
        functionalCurrency: 'USD',
        par: new Map(),
        wallets: new Map([
          [
            chain.chainId,
            {
              merchant: await chain.wallet(`merchant:${store.storeId}`),
              custody: await chain.wallet(`custody:${store.businessId}`),
            },
          ],
        ]),
      },
    ],
    rpcUrls: new Map([[chain.chainId, [chain.rpcUrl]]]),
    chains: createChainRegistry([
      {
        chain_id: chain.chainId,
        tokens: {
          USDT: { address: chain.tokens.USDT.address, decimals: chain.decimals },
          USDC: { address: chain.tokens.USDC.address, decimals: chain.decimals },
        },
        start_block: 0,
        // anvil mines a transaction's block at once (no block time): the indexer's passes keep
        // their shortest interval, scaled like every other by pollIntervalScale.
        block_time_ms: 1,
        ...(input.finalityDepth === undefined
          ? {}
          : { finality: { finalized_tag: false, depth: input.finalityDepth } }),
      },
    ]),
    encryptionKey: input.encryptionKey ?? randomBytes(32),
    adminToken: input.adminToken,
    apiToken: undefined,
    eventsWebhookUrl: undefined,
    eventsWebhookSecret: undefined,
    alertWebhookUrl: undefined,
    alertWebhookSecret: undefined,
    alertSlackWebhookUrl: undefined,
    alertRoutes: undefined,
    alertRemindMs: 60 * 60_000,
    alertChainLagBlocks: 50,
    reportsDir: input.reportsDir,
    reconCron: '0 1 * * *',
    recon: {
      inTransitWindowMs: 60 * 60_000,
      webhookWindowMs: 60 * 60_000,
      stuckMs: 24 * 3_600_000,
      amountTolerance: 0n,
    },
    pollsPerSecond: 50,
    pollIntervalScale: input.pollIntervalScale,
    queuePrefix: input.queuePrefix,
    refundGraceMs: 24 * 3_600_000,
  };
}
