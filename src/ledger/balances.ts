import { type SQL, sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../db/database.ts';
import type { AccountType } from './accounts.ts';

/**
 * Balances, derived from the immutable postings rather than kept in place, so hot accounts
 * (sales, service fees, in transit) are never a row every writer must lock.
 *
 * To keep one account's balance fast as postings grow, checkpoints store the balance over every
 * posting whose writing transaction id is below a horizon. The horizon is the xmin of a snapshot:
 * every transaction below it has finished, so no posting can later appear below it (a posting id
 * or a timestamp could: a transaction that started earlier may commit later). The current
 * balance is then the latest checkpoint plus the few postings at or above its horizon.
 * Balances at a past time use occurred_at (when the movement happened), over an index on
 * (account_id, occurred_at) that carries the amount.
 *
 * A horizon means something only in the transaction-id history of the server that wrote it. After
 * a pg_dump/restore into another server, a restored checkpoint whose horizon is above that
 * server's counter would hide every posting written there until the counter passed it. So only
 * usable checkpoints are read: `ledger_checkpoint_usable(horizon, xmin)` (migrations/0010) holds
 * when the horizon is at or below the id of the transaction that inserted the checkpoint row into
 * this database, which is always true for one written here, and for a restored one exactly when
 * every later posting is at or above it. checkpointBalances deletes the others and recomputes from
 * the latest usable one (or from zero). Restored postings keep their original tx_id, possibly above
 * this server's counter: they are in the tail until a horizon passes them, then in exactly one
 * checkpoint's increment, since consecutive horizons split the tx_id range without overlap.
 */
export interface AccountBalance {
  accountId: bigint;
  code: string;
  type: AccountType;
  storeId: string;
  chainId: number;
  token: string;
  symbol: string;
  decimals: number;
  asset: string;
  balance: bigint;
}

/** Current, at a time (by occurred_at), or just after an entry (by entry id). */
export type BalancePoint = undefined | Date | { entryId: bigint };

export async function accountBalance(db: DbExecutor, accountId: bigint, at?: BalancePoint): Promise<bigint> {
  const id = accountId.toString();
  if (at !== undefined) {
    const { rows } = await db.execute<{ balance: string }>(sql`
      select ${balanceExpression(sql`${id}::bigint`, at)} as balance`);
    return BigInt(rows[0]?.balance ?? '0');
  }
  // Two statements on purpose: with the horizon as a parameter the planner sees a short tail
  // and scans it directly; inside one statement it guesses a third of the account and starts
  // parallel workers, which costs more than the read (docs/benchmarks.md).
  const cp = await db.execute<{ horizon: string; balance: string }>(sql`
    select horizon::text, balance::text from ledger_balance_checkpoints c
    where account_id = ${id}::bigint and ledger_checkpoint_usable(c.horizon, c.xmin)
    order by horizon desc limit 1`);
  const horizon = cp.rows[0]?.horizon ?? '0';
  const tail = await db.execute<{ sum: string | null }>(sql`
    select sum(amount)::text as sum from ledger_postings
    where account_id = ${id}::bigint and tx_id >= ${horizon}::xid8`);
  return BigInt(cp.rows[0]?.balance ?? '0') + BigInt(tail.rows[0]?.sum ?? '0');
}

export async function balances(
  db: DbExecutor,
  options: { storeId?: string; at?: BalancePoint } = {},
): Promise<AccountBalance[]> {
  const { rows } = await db.execute<{
    id: string;
    code: string;
    type: AccountType;
    store_id: string;
    chain_id: string;
    token: string;
    symbol: string;
    decimals: number;
    asset: string;
    balance: string;
  }>(sql`
    select a.id::text, a.code, a.type, a.store_id, a.chain_id::text, a.token, a.symbol, a.decimals, a.asset,
           ${balanceExpression(sql`a.id`, options.at)} as balance
    from ledger_accounts a
    where ${options.storeId ?? null}::text is null or a.store_id = ${options.storeId ?? null}
    order by a.code`);
  return rows.map((r) => ({
    accountId: BigInt(r.id),
    code: r.code,
    type: r.type,
    storeId: r.store_id,
    chainId: Number(r.chain_id),
    token: r.token,
    symbol: r.symbol,
    decimals: r.decimals,
    asset: r.asset,
    balance: BigInt(r.balance),
  }));
}

export interface TrialBalanceLine {
  asset: string;
  symbol: string;
  decimals: number;
  /** Sum of debit balances and of credit balances (negative); they must cancel. */
  debits: bigint;
  credits: bigint;
  /** Must be zero: the books balance per asset. */
  net: bigint;
}

/**
 * Every account's balance summed per asset: each asset must net to zero, over all stores or one
 * (an entry posts to one store's accounts only).
 */
export async function trialBalance(
  db: DbExecutor,
  options: { at?: BalancePoint; storeId?: string } = {},
): Promise<TrialBalanceLine[]> {
  const all = await balances(db, { at: options.at, storeId: options.storeId });
  const byAsset = new Map<string, TrialBalanceLine>();
  for (const b of all) {
    const line = byAsset.get(b.asset) ?? {
      asset: b.asset,
      symbol: b.symbol,
      decimals: b.decimals,
      debits: 0n,
      credits: 0n,
      net: 0n,
    };
    if (b.balance > 0n) line.debits += b.balance;
    else line.credits += b.balance;
    line.net += b.balance;
    byAsset.set(b.asset, line);
  }
  return [...byAsset.values()].sort((a, b) => (a.asset < b.asset ? -1 : 1));
}

/**
 * Advances every account's checkpoint to the current horizon, incrementally (previous checkpoint
 * plus the postings between the two horizons), and prunes all but the two latest per account.
 * Checkpoints that are not usable on this server (restored from another one, see above) are
 * deleted first, so the increment starts from the latest usable one, or from zero.
 * Safe to run concurrently and repeatedly; run it periodically (a job) or after bulk posting. A
 * run that meets another one's writes (a serialization failure) rolls back and returns no horizon:
 * the other run advanced the checkpoints.
 */
export async function checkpointBalances(db: Db): Promise<{ accounts: number; horizon: string | null }> {
  try {
    return await checkpointOnce(db);
  } catch (err) {
    // Another run advanced or pruned the same checkpoints first (a stalled job given back beside
    // the scheduler's next one): it did this run's work, and this one rolled back whole.
    if ((err as { cause?: { code?: string } }).cause?.code === SERIALIZATION_FAILURE)
      return { accounts: 0, horizon: null };
    throw err;
  }
}

/** PostgreSQL's serialization_failure: a repeatable-read transaction met a concurrent update. */
const SERIALIZATION_FAILURE = '40001';

async function checkpointOnce(db: Db): Promise<{ accounts: number; horizon: string }> {
  return db.transaction(
    async (tx) => {
      const h = await tx.execute<{ horizon: string }>(
        sql`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`,
      );
      const horizon = h.rows[0]?.horizon ?? '0';
      await tx.execute(sql`
        delete from ledger_balance_checkpoints c where not ledger_checkpoint_usable(c.horizon, c.xmin)`);
      const written = await tx.execute(sql`
        insert into ledger_balance_checkpoints (account_id, horizon, balance, postings)
        select a.id, ${horizon}::xid8, coalesce(prev.balance, 0) + d.delta, coalesce(prev.postings, 0) + d.n
        from ledger_accounts a
        left join lateral (
          select c.horizon, c.balance, c.postings from ledger_balance_checkpoints c
          where c.account_id = a.id and ledger_checkpoint_usable(c.horizon, c.xmin)
          order by c.horizon desc limit 1
        ) prev on true
        join lateral (
          select sum(p.amount) as delta, count(*) as n from ledger_postings p
          where p.account_id = a.id and p.tx_id >= coalesce(prev.horizon, '0'::xid8) and p.tx_id < ${horizon}::xid8
        ) d on d.n > 0
        where coalesce(prev.horizon, '0'::xid8) < ${horizon}::xid8
        on conflict do nothing`);
      await tx.execute(sql`
        delete from ledger_balance_checkpoints c
        using (
          select account_id, horizon, row_number() over (partition by account_id order by horizon desc) as rn
          from ledger_balance_checkpoints
        ) old
        where c.account_id = old.account_id and c.horizon = old.horizon and old.rn > 2`);
      return { accounts: written.rowCount ?? 0, horizon };
    },
    { isolationLevel: 'repeatable read' },
  );
}

function balanceExpression(accountId: SQL, at: BalancePoint): SQL {
  if (at instanceof Date) {
    return sql`(select coalesce(sum(p.amount), 0)::text from ledger_postings p
                where p.account_id = ${accountId} and p.occurred_at <= ${at.toISOString()}::timestamptz)`;
  }
  if (at) {
    return sql`(select coalesce(sum(p.amount), 0)::text from ledger_postings p
                where p.account_id = ${accountId} and p.entry_id <= ${at.entryId.toString()}::bigint)`;
  }
  return sql`(
    with cp as (
      select c.horizon, c.balance from ledger_balance_checkpoints c
      where c.account_id = ${accountId} and ledger_checkpoint_usable(c.horizon, c.xmin)
      order by c.horizon desc limit 1
    )
    select (coalesce((select balance from cp), 0) + coalesce((
      select sum(p.amount) from ledger_postings p
      where p.account_id = ${accountId} and p.tx_id >= coalesce((select horizon from cp), '0'::xid8)
    ), 0))::text)`;
}
