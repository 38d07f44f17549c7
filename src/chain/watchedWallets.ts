import { sql } from 'drizzle-orm';
import type { Config } from '../config/loadConfig.ts';
import type { StoreWallets } from '../config/stores.ts';
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

/**
 * Whether the pool `w` (a chain_watched_wallets row) is closed: its claim or refund is final and
 * booked (migration 0008's index predicate, chain_transfers_pool_closing_idx), and the pool holds
 * nothing of ours by our own booked transfers. From the link's live allocations: what its funding
 * pieces put in less its sweeps, claim and refund is zero or less, or the claim and refund paid out
 * the whole link amount A (the `claim_link.funded` debit), so what is left is the fee rule 5 booked
 * as the service's, which it may sweep later. A pool funded twice, or whose fee sweep was taken for
 * its claim, thus stays watched until the rest is out, so its claim is never missed.
 */
const poolClosed = sql`(exists (
  select 1 from chain_transfers t
  where t.chain_id = w.chain_id and t.from_address = lower(w.address)
    and t.state = 'final' and t.applied_at is not null
    and (t.matched_as like '%claim_link_claimed%' or t.matched_as like '%claim_link_refunded%'))
  and exists (
    select 1 from (
      select coalesce(sum(a.amount) filter (where a.purpose = 'funding'), 0) as funded,
             coalesce(sum(a.amount) filter (where a.purpose = 'fee_sweep'), 0) as swept,
             coalesce(sum(a.amount) filter (where a.purpose in ('claim', 'refund')), 0) as paid
      from allocations a
      where a.obligation_type = 'claim_link' and a.obligation_id = w.claim_link_id and a.side = 'out'
    ) s
    where s.funded - s.swept - s.paid <= 0 or s.paid >= (
      select coalesce(sum(p.amount), 0) from ledger_entries e join ledger_postings p on p.entry_id = e.id
      where e.ref_type = 'claim_link' and e.ref_id = w.claim_link_id and e.kind = 'claim_link.funded'
        and p.amount > 0)))`;

/**
 * Every watched wallet of the chain: one entry per (address, role), with all the stores it serves.
 * An address has one role: a wallet of STORES_FILE (merchant or custody) is never also a pool. A
 * chain_watched_wallets row for such an address (one the matcher learnt before it refused that)
 * is left out, so callers that key the list by address cannot read a merchant wallet as a pool.
 *
 * `closedPools: 'exclude'` (the indexer's log filter) leaves out the pools whose link is closed on
 * chain: its claim or its refund to custody is final and booked and the pool holds nothing of ours
 * (poolClosed), so nothing that pool sends later is ours to book (the service settling its fee), and a filter of every pool ever funded would
 * grow without end (eth_getLogs takes the wallets as one topic list). The matcher keeps them
 * ('include', the default) to classify rows stored before. A closing transfer orphaned by a reorg
 * is no longer final, so its pool is watched again and the transfer's new inclusion is read.
 */
export async function watchedWallets(
  db: DbExecutor,
  config: Pick<Config, 'stores'>,
  chainId: number,
  options: { closedPools?: 'include' | 'exclude' } = {},
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
  const open = options.closedPools === 'exclude' ? sql`and not ${poolClosed}` : sql``;
  const { rows } = await db.execute<{ address: string; store_id: string; claim_link_id: string | null }>(sql`
    select w.address, w.store_id, w.claim_link_id from chain_watched_wallets w
    where w.chain_id = ${chainId} ${open} order by w.added_at, w.address`);
  const configured = new Set<string>([...byKey.values()].map((w) => w.address));
  for (const row of rows) {
    if (!configured.has(row.address.toLowerCase())) add(row.address, 'pool', row.store_id, row.claim_link_id);
  }
  return [...byKey.values()];
}

/**
 * The merchant wallet (lowercase) of one store on one chain, as STORES_FILE lists it; undefined
 * when the store lists none there or is not configured. Rule 2 proves an intent's payment only
 * into this wallet: a payment into another store's wallet is no proof of this store's sale.
 */
export function merchantWalletOf(
  stores: readonly StoreWallets[],
  storeId: string,
  chainId: number,
): `0x${string}` | undefined {
  const merchant = stores.find((s) => s.storeId === storeId)?.wallets.get(chainId)?.merchant;
  return merchant ? (merchant.toLowerCase() as `0x${string}`) : undefined;
}

/** What an address already is on a chain: a wallet of STORES_FILE, or a pool the matcher learnt. */
export type WalletRole =
  | { role: 'merchant' | 'custody'; storeIds: string[] }
  | { role: 'pool'; storeIds: string[]; claimLinkId: string | null };

/**
 * The role of each of `addresses` (lowercase keys) that has one; configured wallets first, as in
 * `watchedWallets`. One read of chain_watched_wallets by primary key, for the addresses not
 * configured.
 */
export async function walletRoles(
  db: DbExecutor,
  config: Pick<Config, 'stores'>,
  chainId: number,
  addresses: readonly string[],
): Promise<Map<string, WalletRole>> {
  const wanted = new Set(addresses.map((a) => a.toLowerCase()));
  const roles = new Map<string, WalletRole>();
  const add = (address: string, role: 'merchant' | 'custody', storeId: string) => {
    const lower = address.toLowerCase();
    if (!wanted.has(lower)) return;
    const existing = roles.get(lower);
    if (!existing) roles.set(lower, { role, storeIds: [storeId] });
    else if (!existing.storeIds.includes(storeId)) existing.storeIds.push(storeId);
  };
  for (const store of config.stores) {
    const w = store.wallets.get(chainId);
    if (!w) continue;
    add(w.merchant, 'merchant', store.storeId);
    add(w.custody, 'custody', store.storeId);
  }
  const rest = [...wanted].filter((a) => !roles.has(a));
  if (rest.length === 0) return roles;
  const { rows } = await db.execute<{ address: string; store_id: string; claim_link_id: string | null }>(sql`
    select address, store_id, claim_link_id from chain_watched_wallets
    where chain_id = ${chainId} and address in (${sql.join(
      rest.map((a) => sql`${a}`),
      sql`, `,
    )})`);
  for (const row of rows) {
    roles.set(row.address.toLowerCase(), {
      role: 'pool',
      storeIds: [row.store_id],
      claimLinkId: row.claim_link_id,
    });
  }
  return roles;
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

/**
 * Pools whose history before the indexer learnt them has not been read yet; closed pools need none
 * (their closing transfer was stored, and what they send after it is not ours to book).
 */
export async function poolsToCatchUp(
  db: DbExecutor,
  chainId: number,
): Promise<{ address: `0x${string}`; fromBlock: bigint }[]> {
  const { rows } = await db.execute<{ address: string; from_block: string }>(sql`
    select w.address, w.from_block::text from chain_watched_wallets w
    where w.chain_id = ${chainId} and not w.caught_up and not ${poolClosed}
    order by w.from_block, w.address`);
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
