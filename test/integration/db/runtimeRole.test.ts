import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE } from '../../helpers/tokens.ts';

/**
 * Issue 32, item 1: the daemon's own connection (the URL its processes are given) cannot rewrite
 * the books' past. The rewrite below is what a table owner can do even without being a
 * superuser: switch the immutability triggers off, change amounts, memo and dates, switch them on.
 */
const REWRITE = [
  'alter table ledger_postings disable trigger user',
  'alter table ledger_entries disable trigger user',
  'update ledger_postings set amount = amount * 100, tx_id = pg_current_xact_id()',
  `update ledger_entries set memo = 'rewritten', occurred_at = occurred_at - interval '30 days', tx_id = pg_current_xact_id()`,
  'alter table ledger_postings enable trigger user',
  'alter table ledger_entries enable trigger user',
];

let client: pg.Client;

beforeAll(async () => {
  const database = await createMigratedDatabase('runtime_role');
  await postEntry(database.db, {
    idempotencyKey: 'sale-1',
    kind: 'test.sale',
    occurredAt: new Date('2026-11-01T00:00:00Z'),
    storeId: 'st_a',
    ref: { type: 'test', id: '1' },
    memo: 'the original',
    lines: [
      { account: account('assets:wallet', 'st_a', USDC_BASE), amount: 1_000_000n },
      { account: account('income:sales', 'st_a', USDC_BASE), amount: -1_000_000n },
    ],
  });
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterAll(() => client?.end());

/** Runs the statements in one transaction: the error of the first that fails, or undefined. */
async function attempt(statements: string[]): Promise<{ failedAt: number; message: string } | undefined> {
  await client.query('begin');
  for (const [i, statement] of statements.entries()) {
    try {
      await client.query(statement);
    } catch (err) {
      await client.query('rollback');
      return { failedAt: i, message: err instanceof Error ? err.message : String(err) };
    }
  }
  await client.query('commit');
  return undefined;
}

describe("the daemon's database role", () => {
  it('behavior: cannot switch off the ledger triggers to rewrite history (fails at the first statement)', async () => {
    expect(await attempt(REWRITE)).toEqual({
      failedAt: 0,
      message: 'must be owner of table ledger_postings',
    });
    const { rows } = await client.query<{ memo: string; amount: string }>(
      'select e.memo, p.amount::text from ledger_entries e join ledger_postings p on p.entry_id = e.id order by p.amount',
    );
    expect(rows).toEqual([
      { memo: 'the original', amount: '-1000000' },
      { memo: 'the original', amount: '1000000' },
    ]);
  });

  it('behavior: cannot TRUNCATE, UPDATE or DELETE a ledger table (refused by privilege, not only by trigger)', async () => {
    for (const table of ['ledger_entries', 'ledger_postings', 'ledger_accounts']) {
      expect(await attempt([`truncate ${table}`])).toEqual({
        failedAt: 0,
        message: `permission denied for table ${table}`,
      });
      expect(await attempt([`update ${table} set id = id`])).toEqual({
        failedAt: 0,
        message: `permission denied for table ${table}`,
      });
      expect(await attempt([`delete from ${table}`])).toEqual({
        failedAt: 0,
        message: `permission denied for table ${table}`,
      });
    }
  });

  it('behavior: is neither a superuser nor the owner of any table', async () => {
    const { rows } = await client.query<{ superuser: boolean; owned: number }>(`
      select (select rolsuper from pg_roles where rolname = current_user) as superuser,
             (select count(*)::int from pg_tables where tableowner = current_user) as owned`);
    expect(rows[0]).toEqual({ superuser: false, owned: 0 });
  });
});
