import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/database.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';

/** What the settlement of final chain transfers needs, built once per process (jobs/chain.ts). */
export interface SettlementDeps {
  db: Db;
  config: Pick<Config, 'stores' | 'chains'>;
  accounts: AccountCache;
  clock: Clock;
  /** How long a final transfer may wait for the fact that explains it before rule 9 books it. */
  unmatchedGraceMs: number;
}
