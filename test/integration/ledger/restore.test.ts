import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { accountBalance, balances, checkpointBalances, trialBalance } from '../../../src/ledger/balances.ts';
import { ensureAccounts } from '../../../src/ledger/ensureAccounts.ts';
import type { EntryDraft } from '../../../src/ledger/entryDraft.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE } from '../../helpers/tokens.ts';

/**
 * A pg_dump/restore into another server brings back ledger rows and balance checkpoints written
 * under that server's transaction ids, which may be far above this server's counter. Simulated
 * the way pg_restore loads data: rows copied in with their original tx_id, before the triggers
 * and NOT VALID constraints exist (here: disabled and dropped, then put back).
 */
const database = await createMigratedDatabase('ledger_restore');
const { db } = database;
// The owner's connection, as pg_restore's: only an owner may disable triggers and drop constraints.
const client = new pg.Client({ connectionString: database.ownerUrl });
await client.connect();
afterAll(() => client.end());

const ASSET = `8453:${USDC_BASE.address}`;

function sale(store: string, key: string, amount: bigint): EntryDraft {
  return {
    idempotencyKey: key,
    kind: 'checkout.confirmed',
    occurredAt: new Date('2026-11-20T12:00:00Z'),
    storeId: store,
    ref: { type: 'checkout_intent', id: key },
    lines: [
      { account: account('assets:wallet', store, USDC_BASE), amount },
      { account: account('income:sales', store, USDC_BASE), amount: -amount },
    ],
  };
}

async function accountsOf(store: string): Promise<{ wallet: bigint; sales: bigint }> {
  const resolved = await ensureAccounts(db, [
    account('assets:wallet', store, USDC_BASE),
    account('income:sales', store, USDC_BASE),
  ]);
  return {
    wallet: resolved.get(`assets:wallet:${store}:8453:USDC`)!.id,
    sales: resolved.get(`income:sales:${store}:8453:USDC`)!.id,
  };
}

/** Runs `load` with the ledger's triggers and NOT VALID constraints out of the way, as pg_restore's data section. */
async function restoreRows(load: (c: pg.Client) => Promise<void>): Promise<void> {
  await client.query('begin');
  try {
    const { rows: notValid } = await client.query<{ table: string; name: string; def: string }>(`
      select conrelid::regclass::text as table, conname as name, pg_get_constraintdef(oid) as def
      from pg_constraint
      where conrelid in ('ledger_entries'::regclass, 'ledger_postings'::regclass) and not convalidated`);
    for (const c of notValid) await client.query(`alter table ${c.table} drop constraint ${c.name}`);
    await client.query('alter table ledger_entries disable trigger user');
    await client.query('alter table ledger_postings disable trigger user');
    await load(client);
    await client.query('alter table ledger_entries enable trigger user');
    await client.query('alter table ledger_postings enable trigger user');
    for (const c of notValid) await client.query(`alter table ${c.table} add constraint ${c.name} ${c.def}`);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback');
    throw err;
  }
}

/** One restored entry: +amount to the wallet, -amount to sales, every row with the given tx_id. */
async function restoredEntry(
  c: pg.Client,
  key: string,
  store: string,
  ids: { wallet: bigint; sales: bigint },
  amount: bigint,
  txId: bigint,
): Promise<void> {
  await c.query(
    `with e as (
       insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash, tx_id)
       values ($1, 'restored', now(), $2, 'test', $1, 'h', $3::xid8) returning id)
     insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at, tx_id)
     select e.id, x.account_id, $4, x.amount, now(), $3::xid8
     from e, (values ($5::bigint, $6::numeric), ($7::bigint, -$6::numeric)) x(account_id, amount)`,
    [key, store, txId.toString(), ASSET, ids.wallet.toString(), amount.toString(), ids.sales.toString()],
  );
}

async function nextXid(): Promise<bigint> {
  const { rows } = await client.query<{ x: string }>(
    'select pg_snapshot_xmax(pg_current_snapshot())::text as x',
  );
  return BigInt(rows[0]!.x);
}

async function walletBalances(
  store: string,
  wallet: bigint,
): Promise<{ listed: bigint; one: bigint; sum: bigint }> {
  const listed = (await balances(db, { storeId: store })).find((b) => b.accountId === wallet)!.balance;
  const one = await accountBalance(db, wallet);
  const { rows } = await db.execute<{ s: string }>(
    sql`select coalesce(sum(amount), 0)::text as s from ledger_postings where account_id = ${wallet.toString()}::bigint`,
  );
  return { listed, one, sum: BigInt(rows[0]!.s) };
}

describe('ledger after a dump and restore from another server', () => {
  it('behavior: foreign checkpoints are not read and are replaced; restored rows above the counter count once, also after the counter passes them', async () => {
    const ids = await accountsOf('st_r');
    const base = await nextXid();
    const high = base + 1_000_000n; // the old server's horizon, far above this server's counter
    await restoreRows(async (c) => {
      await restoredEntry(c, 'restored-1', 'st_r', ids, 1_000n, base + 5_000n); // below the old horizon
      await restoredEntry(c, 'restored-2', 'st_r', ids, 7n, base + 1_500_000n); // in the old server's tail
      await c.query(
        `insert into ledger_balance_checkpoints (account_id, horizon, balance, postings)
         values ($1, $3::xid8, 1000, 1), ($2, $3::xid8, -1000, 1)`,
        [ids.wallet.toString(), ids.sales.toString(), high.toString()],
      );
    });
    expect(await walletBalances('st_r', ids.wallet)).toEqual({ listed: 1_007n, one: 1_007n, sum: 1_007n });

    // A posting on this server, far below the restored horizon: it must count.
    await postEntry(db, sale('st_r', 'after-restore-1', 250n));
    expect(await walletBalances('st_r', ids.wallet)).toEqual({ listed: 1_257n, one: 1_257n, sum: 1_257n });

    // Checkpointing drops the foreign checkpoints and writes this server's own.
    const first = await checkpointBalances(db);
    expect(first.accounts).toBeGreaterThanOrEqual(2);
    const { rows: left } = await client.query<{ n: number }>(
      'select count(*)::int as n from ledger_balance_checkpoints where horizon = $1::xid8',
      [high.toString()],
    );
    expect(left[0]!.n).toBe(0);
    await postEntry(db, sale('st_r', 'after-restore-2', 30n));
    expect(await walletBalances('st_r', ids.wallet)).toEqual({ listed: 1_287n, one: 1_287n, sum: 1_287n });

    // The counter passes restored-1's tx_id: the next checkpoints take it in, once.
    await client.query('create temp table if not exists burn (i int)');
    while ((await nextXid()) <= base + 5_000n) {
      await client.query(`do $$ begin
        for i in 1..2000 loop begin insert into burn values (i); exception when others then null; end; end loop;
      end $$`);
    }
    await postEntry(db, sale('st_r', 'after-restore-3', 100n));
    let horizon = 0n;
    for (let i = 0; i < 100 && horizon <= base + 5_000n; i++) {
      horizon = BigInt((await checkpointBalances(db)).horizon ?? '0');
      if (horizon <= base + 5_000n) await new Promise((r) => setTimeout(r, 100));
    }
    expect(horizon).toBeGreaterThan(base + 5_000n);
    expect(await walletBalances('st_r', ids.wallet)).toEqual({ listed: 1_387n, one: 1_387n, sum: 1_387n });
    // Each checkpoint holds exactly the postings below its horizon.
    const { rows: cps } = await client.query<{ horizon: string; balance: string; below: string }>(
      `select c.horizon::text, c.balance::text,
              (select coalesce(sum(p.amount), 0) from ledger_postings p
               where p.account_id = c.account_id and p.tx_id < c.horizon)::text as below
       from ledger_balance_checkpoints c where c.account_id = $1 order by c.horizon desc`,
      [ids.wallet.toString()],
    );
    expect(BigInt(cps[0]!.horizon)).toBe(horizon);
    for (const cp of cps) expect(cp.balance).toBe(cp.below);
    expect(BigInt(cps[0]!.balance)).toBeGreaterThanOrEqual(1_000n + 250n + 30n);
    for (const line of await trialBalance(db)) expect(line.net).toBe(0n);
  }, 60_000);

  it("behavior: a foreign checkpoint stays unread after this server's counter passes its horizon", async () => {
    // Comparing the horizon with the current counter would accept it again from then on, and the
    // posting written here in between (below the horizon, not in the checkpoint) would vanish.
    const ids = await accountsOf('st_p');
    const base = await nextXid();
    const high = base + 3_000n;
    await restoreRows(async (c) => {
      await restoredEntry(c, 'passed-restored', 'st_p', ids, 50n, base + 1_000n);
      await c.query(
        `insert into ledger_balance_checkpoints (account_id, horizon, balance, postings) values ($1, $2::xid8, 50, 1)`,
        [ids.wallet.toString(), high.toString()],
      );
    });
    await postEntry(db, sale('st_p', 'passed-here', 20n));
    await client.query('create temp table if not exists burn (i int)');
    while ((await nextXid()) <= high) {
      await client.query(`do $$ begin
        for i in 1..2000 loop begin insert into burn values (i); exception when others then null; end; end loop;
      end $$`);
    }
    expect(await walletBalances('st_p', ids.wallet)).toEqual({ listed: 70n, one: 70n, sum: 70n });
  }, 60_000);

  it('behavior: a checkpoint restored from a server behind this one is still used', async () => {
    const ids = await accountsOf('st_q');
    await postEntry(db, sale('st_q', 'behind-1', 40n));
    const base = await nextXid();
    // Restored rows and a checkpoint all below this server's counter: the old history is a prefix.
    await restoreRows(async (c) => {
      await restoredEntry(c, 'behind-restored', 'st_q', ids, 2n, base - 10n);
      await c.query(
        `insert into ledger_balance_checkpoints (account_id, horizon, balance, postings)
         values ($1, $2::xid8, 123456, 1)`,
        [ids.wallet.toString(), (base - 5n).toString()],
      );
    });
    // The checkpoint's made-up balance shows that it is read: it stands for what is below it.
    const { rows } = await db.execute<{ s: string }>(sql`
      select coalesce(sum(amount), 0)::text as s from ledger_postings
      where account_id = ${ids.wallet.toString()}::bigint and tx_id >= ${(base - 5n).toString()}::xid8`);
    expect(await accountBalance(db, ids.wallet)).toBe(123_456n + BigInt(rows[0]!.s));
  });

  it("error: a restored entry whose tx_id this server's counter reaches takes no postings", async () => {
    const ids = await accountsOf('st_c');
    // Restored entries with tx_ids just above the counter, one per id, so that the next
    // transaction's id is one of them even with other test files taking ids meanwhile.
    const base = await nextXid();
    await restoreRows(async (c) => {
      await c.query(
        `with e as (
           insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash, tx_id)
           select 'collide-' || g, 'restored', now(), 'st_c', 'test', g::text, 'h', ($1::bigint + g)::text::xid8
           from generate_series(1, 20000) g returning id, tx_id)
         insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at, tx_id)
         select e.id, x.account_id, $2, x.amount, now(), e.tx_id
         from e, (values ($3::bigint, 1), ($4::bigint, -1)) x(account_id, amount)`,
        [base.toString(), ASSET, ids.wallet.toString(), ids.sales.toString()],
      );
    });
    await client.query('begin');
    try {
      const { rows } = await client.query<{ id: string }>(
        'select id::text from ledger_entries where tx_id = pg_current_xact_id()',
      );
      expect(rows).toHaveLength(1);
      const error = await client
        .query(
          `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at) values ($1, $2, $3, 5000000, now())`,
          [rows[0]!.id, ids.wallet.toString(), ASSET],
        )
        .then(() => client.query('commit'))
        .then(
          () => undefined,
          (err: Error) => err.message,
        );
      expect(error).toMatch(/must be written in the transaction that wrote the entry/);
    } finally {
      await client.query('rollback');
    }
  });
});
