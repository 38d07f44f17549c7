import type { Clock } from '../clock.ts';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { Config } from '../config/loadConfig.ts';
import type { StoreConfig, StoreWallets } from '../config/stores.ts';
import type { Db } from '../db/database.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import { type AccountCache, createAccountCache } from '../ledger/ensureAccounts.ts';
import type { Logger } from '../logging/logger.ts';
import { createSvcClient, type SvcClient, type SvcClientOptions } from '../svc/client.ts';

/**
 * What every domain function (payments, payouts, the inbox) is handed: the database, the chain
 * registry, the stores' wallets, the account cache, the signed service client of each store, the
 * clock, the logger and the key that seals claim URLs. Built once per process by
 * createDomainContext, from the configuration, by the daemon, the CLI and the demo alike; never a
 * global.
 */
export interface DomainContext {
  db: Db;
  chains: ChainRegistry;
  /**
   * Each store's wallets from STORES_FILE (rule 2 proves a payment only into its store's merchant
   * wallet), and its par policy (the read API's valuation).
   */
  stores: readonly (StoreWallets & { par?: StoreConfig['par'] })[];
  /** Account ids of this process's ledger writes (accounts are immutable, so this never goes stale). */
  accounts: AccountCache;
  /** The signed client of a store; throws UnknownStoreError for a store that is not configured. */
  client(storeId: string): SvcClient;
  clock: Clock;
  logger: Logger;
  /** ENCRYPTION_KEY, 32 bytes: seals claim URLs and tokens at rest (payouts/secretBox.ts). */
  encryptionKey: Buffer;
}

/** A store id that STORES_FILE does not name: a mistake in the command or the data, not retryable. */
export class UnknownStoreError extends StablebooksError {
  override readonly name = 'UnknownStoreError';
  readonly retryable = false;
  constructor(readonly storeId: string) {
    super(`store ${storeId} is not in STORES_FILE`);
  }
}

export interface DomainContextOptions {
  db: Db;
  clock: Clock;
  logger: Logger;
  /**
   * What the process wants of its clients beyond the store's credentials: retries, the key's
   * pause, request metrics. Clients are built on first use and kept, one per store.
   */
  clientOptions?: (storeId: string) => Omit<SvcClientOptions, 'baseUrl' | 'credentials' | 'clock'>;
}

export function createDomainContext(
  config: Pick<Config, 'stores' | 'chains' | 'svcBaseUrl' | 'encryptionKey'>,
  options: DomainContextOptions,
): DomainContext {
  const stores = new Map(config.stores.map((s) => [s.storeId, s]));
  const clients = new Map<string, SvcClient>();
  return {
    db: options.db,
    chains: config.chains,
    stores: config.stores.map((s) => ({ storeId: s.storeId, wallets: s.wallets, par: s.par })),
    accounts: createAccountCache(),
    clock: options.clock,
    logger: options.logger,
    encryptionKey: config.encryptionKey,
    client(storeId) {
      let client = clients.get(storeId);
      if (!client) {
        const store = stores.get(storeId);
        if (!store) throw new UnknownStoreError(storeId);
        client = createSvcClient({
          baseUrl: config.svcBaseUrl,
          credentials: store,
          clock: options.clock,
          ...options.clientOptions?.(storeId),
        });
        clients.set(storeId, client);
      }
      return client;
    },
  };
}
