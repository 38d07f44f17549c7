import { randomBytes } from 'node:crypto';
import { createSandboxChain } from './chain/sandboxChain.ts';
import type { SandboxChain } from './chain/types.ts';
import { createFaults } from './faults.ts';
import { createSandboxClock } from './sandboxClock.ts';
import type { SandboxConfig } from './sandboxConfig.ts';
import { createWebhookDispatcher } from './webhooks/webhookDispatcher.ts';
import { custodyWallet, type SandboxWorld } from './world.ts';

/** Whole coins minted into every business custody wallet at start, per chain and coin. */
export const INITIAL_CUSTODY_COINS = 1_000_000n;

/**
 * Builds the simulated service's world on running anvil nodes: tokens deployed, custody wallets
 * funded, a controllable clock, the webhook dispatcher. `baseUrl` is set once the server listens.
 */
export async function createSandboxWorld(options: {
  config: SandboxConfig;
  chains: Array<{ chainId: number; rpcUrl: string }>;
  seed?: string;
}): Promise<SandboxWorld & { setBaseUrl(url: string): void; close(): void }> {
  const seed = options.seed ?? randomBytes(8).toString('hex');
  const clock = createSandboxClock();
  const faults = createFaults();
  const chains = new Map<number, SandboxChain>();
  for (const c of options.chains) {
    const chain = await createSandboxChain({ chainId: c.chainId, rpcUrl: c.rpcUrl, seed });
    chains.set(c.chainId, chain);
    for (const business of options.config.businesses) {
      const custody = await custodyWallet(chain, business.business_id);
      for (const symbol of ['USDT', 'USDC'] as const) {
        await chain.mint(symbol, custody, INITIAL_CUSTODY_COINS * 10n ** BigInt(chain.decimals));
      }
    }
  }
  const webhooks = createWebhookDispatcher({ config: options.config, clock, faults });
  let baseUrl = 'http://127.0.0.1';
  return {
    config: options.config,
    clock,
    chains,
    webhooks,
    faults,
    baseUrl: () => baseUrl,
    setBaseUrl: (url) => {
      baseUrl = url.replace(/\/$/, '');
    },
    close: () => {
      webhooks.stop();
      clock.stop();
    },
  };
}
