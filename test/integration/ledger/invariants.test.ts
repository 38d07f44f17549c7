import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';

/**
 * Each invariant the database enforces, attacked with raw SQL that bypasses the application
 * (ledger issue point 2): the database alone must refuse it.
 */
let client: pg.Client;
let wallet: bigint;
let sales: bigint;
let bnbWallet: bigint;
let otherStoreWallet: bigint;
let entryId: bigint;

beforeAll(async () => {
  const database = await createMigratedDatabase('ledger_invariants');
  const posted = await postEntry(database.db, {
    idempotencyKey: 'seed-1',
    kind: 'test.seed',
    occurredAt: new Date('2026-11-01T00:00:00Z'),
    storeId: 'st_a',
    ref: { type: 'test', id: '1' },
    lines: [
      { account: account('assets:wallet', 'st_a', USDC_BASE), amount: 1_000_000n },
      { account: account('income:sales', 'st_a', USDC_BASE), amount: -1_000_000n },
    ],
  });
  await postEntry(database.db, {
    idempotencyKey: 'seed-2',
    kind: 'test.seed',
    occurredAt: new Date('2026-11-01T00:00:00Z'),
    storeId: 'st_a',
    ref: { type: 'test', id: '2' },
    lines: [
      { account: account('assets:wallet', 'st_a', USDT_BNB), amount: 10n ** 18n },
      { account: account('income:sales', 'st_a', USDT_BNB), amount: -(10n ** 18n) },
    ],
  });
  await postEntry(database.db, {
    idempotencyKey: 'seed-3',
    kind: 'test.seed',
    occurredAt: new Date('2026-11-01T00:00:00Z'),
    storeId: 'st_b',
    ref: { type: 'test', id: '3' },
    lines: [
      { account: account('assets:wallet', 'st_b', USDC_BASE), amount: 1_000n },
      { account: account('income:sales', 'st_b', USDC_BASE), amount: -1_000n },
    ],
  });
  entryId = posted.id;
  // The owner's connection: the triggers and constraints must hold even against it (the daemon's
  // role is refused earlier, by privilege: test/integration/db/runtimeRole.test.ts).
  client = new pg.Client({ connectionString: database.ownerUrl });
  await client.connect();
  const ids = await client.query<{ id: string; code: string }>('select id::text, code from ledger_accounts');
  const byCode = new Map(ids.rows.map((r) => [r.code, BigInt(r.id)]));
  wallet = byCode.get('assets:wallet:st_a:8453:USDC')!;
  sales = byCode.get('income:sales:st_a:8453:USDC')!;
  bnbWallet = byCode.get('assets:wallet:st_a:56:USDT')!;
  otherStoreWallet = byCode.get('assets:wallet:st_b:8453:USDC')!;
});
afterAll(() => client.end());

const ASSET = `8453:${USDC_BASE.address}`;
const BNB_ASSET = `56:${USDT_BNB.address}`;

/** Runs statements in one transaction and returns the database's error message, if any. */
async function attempt(statements: (string | [string, unknown[]])[]): Promise<string | undefined> {
  try {
    await client.query('begin');
    for (const s of statements) {
      if (typeof s === 'string') await client.query(s);
      else await client.query(s[0], s[1]);
    }
    await client.query('commit');
    return undefined;
  } catch (err) {
    await client.query('rollback').catch(() => {});
    return (err as Error).message;
  }
}

const newEntry = (key: string) =>
  [
    `insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash)
     values ($1, 'test', now(), 'st_a', 'test', 'x', 'h') returning id`,
    [key],
  ] as [string, unknown[]];
const posting = (account: bigint, asset: string, amount: string) =>
  [
    `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
     values (currval('ledger_entries_id_seq'), $1, $2, $3, now())`,
    [account.toString(), asset, amount],
  ] as [string, unknown[]];

describe('ledger invariants enforced by PostgreSQL', () => {
  it('error: (a) postings that do not sum to zero are rejected at commit', async () => {
    const error = await attempt([
      newEntry('unbalanced'),
      posting(wallet, ASSET, '100'),
      posting(sales, ASSET, '-99'),
    ]);
    expect(error).toMatch(/does not balance: asset 8453:0x8335\S+ sums to 1/);
  });

  it('error: (a) balanced in total but not per asset is rejected', async () => {
    const error = await attempt([
      newEntry('cross-asset'),
      posting(wallet, ASSET, '100'),
      posting(bnbWallet, BNB_ASSET, '-100'),
    ]);
    expect(error).toMatch(/does not balance/);
  });

  it('behavior: a balanced entry written with raw SQL commits', async () => {
    expect(
      await attempt([newEntry('raw-ok'), posting(wallet, ASSET, '100'), posting(sales, ASSET, '-100')]),
    ).toBeUndefined();
  });

  it('error: (b) entries and postings cannot be updated, deleted or truncated', async () => {
    expect(await attempt([`update ledger_entries set memo = 'x' where id = ${entryId}`])).toMatch(
      /UPDATE on ledger_entries is not allowed/,
    );
    expect(await attempt([`delete from ledger_entries where id = ${entryId}`])).toMatch(
      /DELETE on ledger_entries is not allowed/,
    );
    expect(await attempt([`update ledger_postings set amount = 5 where entry_id = ${entryId}`])).toMatch(
      /UPDATE on ledger_postings is not allowed/,
    );
    expect(await attempt([`delete from ledger_postings where entry_id = ${entryId}`])).toMatch(
      /DELETE on ledger_postings is not allowed/,
    );
    expect(await attempt(['truncate ledger_postings cascade'])).toMatch(
      /TRUNCATE on ledger_\w+ is not allowed/,
    );
    expect(await attempt([`update ledger_accounts set symbol = 'X' where id = ${wallet}`])).toMatch(
      /UPDATE on ledger_accounts is not allowed/,
    );
  });

  it("error: (c) a posting whose asset is not its account's asset is rejected", async () => {
    const error = await attempt([
      newEntry('wrong-asset'),
      posting(wallet, BNB_ASSET, '100'),
      posting(bnbWallet, BNB_ASSET, '-100'),
    ]);
    expect(error).toMatch(/ledger_postings_account_asset_fk/);
  });

  it('error: (d) an entry with fewer than two postings is rejected', async () => {
    expect(await attempt([newEntry('no-postings')])).toMatch(
      /has 0 posting\(s\); an entry needs at least two/,
    );
  });

  it('error: (e) an idempotency key is unique', async () => {
    expect(
      await attempt([newEntry('seed-1'), posting(wallet, ASSET, '1'), posting(sales, ASSET, '-1')]),
    ).toMatch(/ledger_entries_idempotency_key_unique/);
  });

  it('error: a zero posting is rejected', async () => {
    expect(
      await attempt([newEntry('zero'), posting(wallet, ASSET, '0'), posting(sales, ASSET, '0')]),
    ).toMatch(/ledger_postings_amount_nonzero/);
  });

  it('error: postings cannot be added to an entry committed earlier', async () => {
    const error = await attempt([
      [
        `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at) values ($1, $2, $3, 5, now())`,
        [entryId.toString(), wallet.toString(), ASSET],
      ],
      [
        `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at) values ($1, $2, $3, -5, now())`,
        [entryId.toString(), sales.toString(), ASSET],
      ],
    ]);
    expect(error).toMatch(/must be written in the transaction that wrote the entry/);
  });

  it('error: an entry reverses another at most once', async () => {
    const reversal = (key: string) =>
      [
        `insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash, reverses_entry_id)
         values ($1, 'test.reversal', now(), 'st_a', 'test', 'x', 'h', $2)`,
        [key, entryId.toString()],
      ] as [string, unknown[]];
    expect(
      await attempt([
        reversal('rev-1'),
        posting(wallet, ASSET, '-1000000'),
        posting(sales, ASSET, '1000000'),
      ]),
    ).toBeUndefined();
    expect(
      await attempt([
        reversal('rev-2'),
        posting(wallet, ASSET, '-1000000'),
        posting(sales, ASSET, '1000000'),
      ]),
    ).toMatch(/ledger_entries_reverses_entry_id_unique/);
  });

  it('error: a posting added after the balance check ran early (SET CONSTRAINTS ALL IMMEDIATE) is checked again', async () => {
    // The review's reproduction: the check passes at SET CONSTRAINTS, then +5,000,000 joins the entry.
    const error = await attempt([
      newEntry('early-check'),
      posting(wallet, ASSET, '100'),
      posting(sales, ASSET, '-100'),
      'set constraints all immediate',
      posting(wallet, ASSET, '5000000'),
    ]);
    expect(error).toMatch(/entry \d+ \(early-check\) does not balance.* sums to 5000000/);
    // The same with only the balance constraint made immediate and deferred again before the posting.
    const again = await attempt([
      newEntry('early-check-2'),
      posting(wallet, ASSET, '100'),
      posting(sales, ASSET, '-100'),
      'set constraints ledger_entries_balanced immediate',
      'set constraints ledger_entries_balanced deferred',
      posting(wallet, ASSET, '7'),
    ]);
    expect(again).toMatch(/\(early-check-2\) does not balance/);
  });

  it('behavior: with the check made immediate, whole entries and balanced additions still commit', async () => {
    const entry = (key: string) =>
      [
        `with e as (
           insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash)
           values ($1, 'test', now(), 'st_a', 'test', 'x', 'h') returning id)
         insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
         select e.id, x.account_id, $2, x.amount, now() from e, (values ($3::bigint, 10), ($4::bigint, -10)) x(account_id, amount)`,
        [key, ASSET, wallet.toString(), sales.toString()],
      ] as [string, unknown[]];
    // Immediate means checked at the end of each statement, so an addition balances in its statement.
    const balancedAddition = [
      `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
       select currval('ledger_entries_id_seq'), x.account_id, $1, x.amount, now()
       from (values ($2::bigint, 3), ($3::bigint, -3)) x(account_id, amount)`,
      [ASSET, wallet.toString(), sales.toString()],
    ] as [string, unknown[]];
    expect(
      await attempt([
        'set constraints all immediate',
        entry('immediate-1'),
        entry('immediate-2'),
        balancedAddition,
      ]),
    ).toBeUndefined();
    // Checked early inside a savepoint that is rolled back: the check runs again at commit.
    expect(
      await attempt([
        newEntry('savepoint-check'),
        posting(wallet, ASSET, '100'),
        posting(sales, ASSET, '-100'),
        'savepoint s',
        'set constraints all immediate',
        'rollback to savepoint s',
        posting(wallet, ASSET, '1'),
      ]),
    ).toMatch(/\(savepoint-check\) does not balance/);
  });

  it('error: tx_id is the inserting transaction id, whatever the writer supplies', async () => {
    // A small tx_id would put the posting below every checkpoint horizon, out of current balances.
    const entryWithTx = [
      `insert into ledger_entries (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, content_hash, tx_id)
       values ('old-tx', 'test', now(), 'st_a', 'test', 'x', 'h', '3')`,
      [],
    ] as [string, unknown[]];
    expect(await attempt([entryWithTx, posting(wallet, ASSET, '1'), posting(sales, ASSET, '-1')])).toMatch(
      /ledger_entries_tx_id_current/,
    );
    const postingWithTx = [
      `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at, tx_id)
       values (currval('ledger_entries_id_seq'), $1, $2, 250, now(), '3')`,
      [wallet.toString(), ASSET],
    ] as [string, unknown[]];
    expect(await attempt([newEntry('old-tx-posting'), postingWithTx, posting(sales, ASSET, '-250')])).toMatch(
      /ledger_postings_tx_id_current/,
    );
    // Supplying the right one is allowed (it is the default).
    const ownTx = [
      `insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at, tx_id)
       values (currval('ledger_entries_id_seq'), $1, $2, 250, now(), pg_current_xact_id())`,
      [wallet.toString(), ASSET],
    ] as [string, unknown[]];
    expect(await attempt([newEntry('own-tx-posting'), ownTx, posting(sales, ASSET, '-250')])).toBeUndefined();
  });

  it("error: a posting to another store's account is refused", async () => {
    const error = await attempt([
      newEntry('cross-store'),
      posting(wallet, ASSET, '100'),
      posting(otherStoreWallet, ASSET, '-100'),
    ]);
    expect(error).toMatch(/is to account \d+ of store st_b; an entry posts to its own store's accounts/);
  });
});
