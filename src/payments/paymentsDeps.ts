import type { ChainRegistry } from '../chain/registry.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/database.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { Logger } from '../logging/logger.ts';
import type { SvcClient } from '../svc/client.ts';

/** What the payments domain needs; built once per process and passed down (no globals). */
export interface PaymentsDeps {
  db: Db;
  chains: ChainRegistry;
  /** Account ids of this process's ledger writes (accounts are immutable, so this never goes stale). */
  accounts: AccountCache;
  /** The signed client of a store; throws for a store that is not configured. */
  client(storeId: string): SvcClient;
  clock: Clock;
  logger: Logger;
}
