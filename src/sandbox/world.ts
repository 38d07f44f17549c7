import type { Address } from 'viem';
import type { SandboxChain } from './chain/types.ts';
import type { Faults } from './faults.ts';
import type { SandboxClock } from './sandboxClock.ts';
import type { SandboxConfig, SandboxStore } from './sandboxConfig.ts';
import type { WebhookDispatcher } from './webhooks/types.ts';

/**
 * Everything the simulated service knows and can do, handed to every route and engine.
 *
 * Glossary
 * - business / store: the service's tenants; a store's api_key signs its requests;
 * - merchant wallet (tx_to): a store's receiving wallet on a chain, label `merchant:<store_id>`;
 * - custody wallet: the business wallet that funds claim links and receives refunds, label
 *   `custody:<business_id>`;
 * - temporary wallet: a fresh deposit wallet per routed payment, label `temp:<intent id>`;
 * - pool wallet: holds one claim link's funds, label `pool:<claim link id>`.
 */
export interface SandboxWorld {
  config: SandboxConfig;
  clock: SandboxClock;
  chains: Map<number, SandboxChain>;
  webhooks: WebhookDispatcher;
  faults: Faults;
  /** Public base URL of this sandbox (for checkout_url and claim_url). */
  baseUrl(): string;
}

export function findStore(
  world: SandboxWorld,
  storeId: string,
): { businessId: string; store: SandboxStore } | undefined {
  for (const business of world.config.businesses) {
    const store = business.stores.find((s) => s.store_id === storeId);
    if (store) return { businessId: business.business_id, store };
  }
  return undefined;
}

export function chainOrThrow(world: SandboxWorld, chainId: number): SandboxChain {
  const chain = world.chains.get(chainId);
  if (!chain)
    throw new Error(
      `sandbox: chain ${chainId} is not simulated (start the sandbox with --chains ${chainId})`,
    );
  return chain;
}

export const merchantWallet = (chain: SandboxChain, storeId: string): Promise<Address> =>
  chain.wallet(`merchant:${storeId}`);
export const custodyWallet = (chain: SandboxChain, businessId: string): Promise<Address> =>
  chain.wallet(`custody:${businessId}`);
