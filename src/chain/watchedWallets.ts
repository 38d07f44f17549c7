import { sql } from 'drizzle-orm';
import type { Config } from '../config/loadConfig.ts';
import type { DbExecutor } from '../db/database.ts';

/**
 * Watched wallets: the wallets whose transfers the indexer stores. Merchant (the service's tx_to)
 * and custody wallets come from STORES_FILE; claim-link pools are learnt at run time
 * (chain_watched_wallets). A custody wallet belongs to a business, so several stores can share it.
 */
export type WatchedRole = 'merchant' | 'custody' | 'pool';

export interface WatchedWallet {
  /** Lowercase. */
  address: `0x${string}`;
  role: WatchedRole;
  storeIds: string[];
  claimLinkId?: string;
}

/** Every watched wallet of the chain: one entry per (address, role), with all the stores it serves. */
export async function watchedWallets(
  db: DbExecutor,
  config: Pick<Config, 'stores'>,
  chainId: number,
): Promise<WatchedWallet[]> {
  const byKey = new Map<string, WatchedWallet>();
  const add = (address: string, role: WatchedRole, storeId: string, claimLinkId?: string | null) => {
    const lower = address.toLowerCase() as `0x${string}`;
    const key = `${role}:${lower}`;
    const existing = byKey.get(key);
    if (existing) {
      if (!existing.storeIds.includes(storeId)) existing.storeIds.push(storeId);
      return;
    }
    byKey.set(key, { address: lower, role, storeIds: [storeId], ...(claimLinkId ? { claimLinkId } : {}) });
  };
  for (const store of config.stores) {
    const w = store.wallets.get(chainId);
    if (!w) continue;
    add(w.merchant, 'merchant', store.storeId);
    add(w.custody, 'custody', store.storeId);
  }
  const { rows } = await db.execute<{ address: string; store_id: string; claim_link_id: string | null }>(sql`
    select address, store_id, claim_link_id from chain_watched_wallets
    where chain_id = ${chainId} order by added_at, address`);
  for (const row of rows) add(row.address, 'pool', row.store_id, row.claim_link_id);
  return [...byKey.values()];
}

/**
 * One pool the matcher may just have learnt (a funding transfer inserts it into
 * chain_watched_wallets), read back so a batch already running sees it; undefined when the
 * address is not a pool. One primary-key read, done only after a funding.
 */
export async function watchedPool(
  db: DbExecutor,
  chainId: number,
  address: string,
): Promise<WatchedWallet | undefined> {
  const { rows } = await db.execute<{ address: string; store_id: string; claim_link_id: string | null }>(sql`
    select address, store_id, claim_link_id from chain_watched_wallets
    where chain_id = ${chainId} and address = ${address.toLowerCase()}`);
  const row = rows[0];
  if (!row) return undefined;
  return {
    address: row.address.toLowerCase() as `0x${string}`,
    role: 'pool',
    storeIds: [row.store_id],
    ...(row.claim_link_id ? { claimLinkId: row.claim_link_id } : {}),
  };
}

/** Pools whose history before the indexer learnt them has not been read yet. */
export async function poolsToCatchUp(
  db: DbExecutor,
  chainId: number,
): Promise<{ address: `0x${string}`; fromBlock: bigint }[]> {
  const { rows } = await db.execute<{ address: string; from_block: string }>(sql`
    select address, from_block::text from chain_watched_wallets
    where chain_id = ${chainId} and not caught_up order by from_block, address`);
  return rows.map((r) => ({
    address: r.address.toLowerCase() as `0x${string}`,
    fromBlock: BigInt(r.from_block),
  }));
}

export async function markPoolCaughtUp(db: DbExecutor, chainId: number, address: string): Promise<void> {
  await db.execute(sql`
    update chain_watched_wallets set caught_up = true
    where chain_id = ${chainId} and lower(address) = ${address.toLowerCase()}`);
}
