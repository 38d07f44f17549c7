import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { type AccountRef, accountCode, accountType } from './accounts.ts';

export interface ResolvedAccount {
  id: bigint;
  asset: string;
  /** The decimals the account was created with: its amounts are base units of that many. */
  decimals: number;
}

/**
 * Account ids, with their asset and decimals (so a posting is checked against them without a
 * statement), by code, for accounts known to be committed. Accounts are immutable, so a cached
 * account never goes stale; only accounts another transaction inserted are remembered. One this
 * transaction inserted (in this statement or an earlier one: rule 1 then rule 2, or two intents
 * of a batch) could be undone by a rollback, and a cached id of a row that no longer exists makes
 * every later posting of the process fail its foreign key.
 */
export type AccountCache = Map<string, ResolvedAccount>;

export function createAccountCache(): AccountCache {
  return new Map();
}

/**
 * Creates the accounts on first use (an idempotent upsert) and returns their ids by code, in one
 * round trip for all of an entry's accounts.
 */
export async function ensureAccounts(
  tx: DbExecutor,
  refs: readonly AccountRef[],
  cache?: AccountCache,
): Promise<Map<string, ResolvedAccount>> {
  const result = new Map<string, ResolvedAccount>();
  const missing = new Map<string, AccountRef>();
  for (const ref of refs) {
    const code = accountCode(ref);
    const cached = cache?.get(code);
    if (cached) result.set(code, cached);
    else missing.set(code, ref);
  }
  if (missing.size === 0) return result;

  const input = JSON.stringify(
    [...missing].map(([code, ref]) => ({
      code,
      type: accountType(ref.kind),
      store_id: ref.storeId,
      chain_id: ref.token.chainId,
      token: ref.token.address.toLowerCase(),
      symbol: ref.token.symbol,
      decimals: ref.token.decimals,
    })),
  );
  // Two tries: a concurrent first use may insert a code after this statement's snapshot began,
  // which ON CONFLICT DO NOTHING then skips while the SELECT cannot see it yet.
  for (let attempt = 0; attempt < 2 && missing.size > 0; attempt++) {
    const { rows } = await tx.execute<{
      id: string;
      code: string;
      asset: string;
      decimals: number;
      inserted: boolean;
    }>(sql`
      with input as (
        select * from jsonb_to_recordset(${input}::jsonb)
          as x(code text, type text, store_id text, chain_id bigint, token text, symbol text, decimals int)
      ), inserted as (
        insert into ledger_accounts (code, type, store_id, chain_id, token, symbol, decimals)
        select code, type, store_id, chain_id, token, symbol, decimals from input
        on conflict (code) do nothing
        returning id, code, asset, decimals
      )
      select id::text, code, asset, decimals, true as inserted from inserted
      union all
      -- A row this transaction inserted in an earlier statement reads back like any other; its
      -- xmin tells it apart, so it is not cached before it commits.
      select a.id::text, a.code, a.asset, a.decimals, coalesce(a.xmin = pg_current_xact_id_if_assigned()::xid, false)
      from ledger_accounts a join input using (code)`);
    for (const row of rows) {
      const resolved = { id: BigInt(row.id), asset: row.asset, decimals: Number(row.decimals) };
      result.set(row.code, resolved);
      missing.delete(row.code);
      if (!row.inserted) cache?.set(row.code, resolved);
    }
  }
  if (missing.size > 0)
    throw new Error(`ledger: could not create or find accounts ${[...missing.keys()].join(', ')}`);
  return result;
}
