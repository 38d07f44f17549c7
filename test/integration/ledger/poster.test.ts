import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { DbExecutor } from '../../../src/db/database.ts';
import { account } from '../../../src/ledger/accounts.ts';
import { accountBalance, balances, checkpointBalances, trialBalance } from '../../../src/ledger/balances.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import type { EntryDraft } from '../../../src/ledger/entryDraft.ts';
import {
  AccountDecimalsError,
  IdempotencyConflictError,
  InvalidEntryError,
} from '../../../src/ledger/errors.ts';
import { postEntries, postEntry, reverseEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';

const { db, pool } = await createMigratedDatabase('ledger_poster');

const sale = (
  key: string,
  amount: bigint,
  occurredAt = new Date('2026-11-10T12:00:00Z'),
  token = USDC_BASE,
): EntryDraft => ({
  idempotencyKey: key,
  kind: 'checkout.confirmed',
  occurredAt,
  storeId: 'st_a',
  ref: { type: 'checkout_intent', id: key },
  lines: [
    { account: account('assets:in_transit', 'st_a', token), amount },
    { account: account('income:sales', 'st_a', token), amount: -amount },
  ],
  metadata: { amount_cents: 1234n, currency: 'USD' },
});

async function balanceOf(code: string, at?: Date | { entryId: bigint }): Promise<bigint> {
  const { rows } = await db.execute<{ id: string }>(
    sql`select id::text from ledger_accounts where code = ${code}`,
  );
  return accountBalance(db, BigInt(rows[0]!.id), at);
}

/** What the database holds of an entry: its row and its postings, as sealContent would read them. */
async function stored(id: bigint) {
  const { rows } = await db.execute<Record<string, unknown>>(sql`
    select e.idempotency_key, e.kind, e.occurred_at, e.store_id, e.ref_type, e.ref_id, e.memo, e.metadata,
           e.content_hash, e.tx_id = p.tx_id as same_tx,
           json_agg(json_build_object('account', p.account_id::text, 'asset', p.asset, 'amount', p.amount::text,
                                      'occurred_at', p.occurred_at) order by p.id) as postings
    from ledger_entries e join ledger_postings p on p.entry_id = e.id
    where e.id = ${id.toString()}::bigint
    group by e.id, p.tx_id`);
  return rows;
}

describe('postEntries', () => {
  const three = (key: string, amount: bigint, storeId = 'st_a'): EntryDraft => ({
    idempotencyKey: key,
    kind: 'checkout.confirmed',
    occurredAt: new Date('2026-11-11T08:00:00.123Z'),
    storeId,
    ref: { type: 'checkout_intent', id: key },
    lines: [
      { account: account('assets:in_transit', storeId, USDC_BASE), amount: amount - 1n },
      { account: account('expense:service_fees', storeId, USDC_BASE), amount: 1n },
      { account: account('income:sales', storeId, USDC_BASE), amount: -amount },
    ],
    memo: `memo ${key}`,
    metadata: { amount_cents: 99n, tx_hash: `0x${key}`, nested: { a: [1, 'x'] } },
  });

  it('behavior: writes each entry in one statement as postEntry writes it, ids in the drafts order', async () => {
    const cache = createAccountCache();
    const batch = ['many-1', 'many-2', 'many-3'].map((k, i) => three(k, 1000n + BigInt(i)));
    const posted = await db.transaction((tx) => postEntries(tx, batch, { accounts: cache }));
    expect(posted.map((p) => p.created)).toEqual([true, true, true]);
    expect(posted[0]!.id < posted[1]!.id && posted[1]!.id < posted[2]!.id).toBe(true);
    // The same drafts under other keys through postEntry: every stored column but the key alike.
    for (const [i, draft] of batch.entries()) {
      const single = await postEntry(db, { ...draft, idempotencyKey: `${draft.idempotencyKey}-single` });
      const [a] = await stored(posted[i]!.id);
      const [b] = await stored(single.id);
      expect(a).toEqual({ ...b, idempotency_key: draft.idempotencyKey });
      expect(a!.same_tx).toBe(true);
    }
  });

  it('behavior: a key posted before with the same content is a replay beside new entries', async () => {
    const first = await postEntry(db, three('many-replay', 500n));
    const posted = await postEntries(db, [
      three('many-new-a', 7n),
      three('many-replay', 500n),
      three('many-new-b', 8n),
    ]);
    expect(posted[1]).toEqual({ id: first.id, created: false });
    expect(posted[0]!.created && posted[2]!.created).toBe(true);
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_postings where entry_id = ${first.id.toString()}::bigint`,
    );
    expect(rows[0]!.n).toBe(3);
  });

  it('behavior: the same key twice in one call is written once, the second a replay', async () => {
    const posted = await postEntries(db, [three('many-twice', 9n), three('many-twice', 9n)]);
    expect(posted[0]!.created).toBe(true);
    expect(posted[1]).toEqual({ id: posted[0]!.id, created: false });
    await expect(
      postEntries(db, [three('many-twice-2', 9n), three('many-twice-2', 10n)]),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
  });

  it('error: a key posted before with other content is an IdempotencyConflict, and the call rolls back with the transaction', async () => {
    await postEntry(db, three('many-conflict', 500n));
    await expect(
      db.transaction((tx) => postEntries(tx, [three('many-kept-a', 1n + 5n), three('many-conflict', 501n)])),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_entries where idempotency_key = 'many-kept-a'`,
    );
    expect(rows[0]!.n).toBe(0);
  });

  it('error: an unbalanced draft or an account of other decimals refuses the whole call before the database', async () => {
    const bad = three('many-bad', 10n);
    await expect(
      postEntries(db, [three('many-ok', 10n), { ...bad, lines: [bad.lines[0]!, bad.lines[2]!] }]),
    ).rejects.toThrow(/does not balance/);
    await postEntry(db, three('many-dec', 10n, 'st_dec'));
    const other = { ...USDC_BASE, decimals: 18 };
    const wrong: EntryDraft = {
      ...three('many-dec-2', 10n, 'st_dec'),
      lines: three('many-dec-2', 10n, 'st_dec').lines.map((l) => ({
        ...l,
        account: { ...l.account, token: other },
      })),
    };
    await expect(postEntries(db, [three('many-ok-2', 10n), wrong])).rejects.toBeInstanceOf(
      AccountDecimalsError,
    );
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_entries where idempotency_key in ('many-ok', 'many-ok-2', 'many-bad', 'many-dec-2')`,
    );
    expect(rows[0]!.n).toBe(0);
  });
});

describe('postEntry', () => {
  it('behavior: the same key and content is an idempotent replay', async () => {
    const first = await postEntry(db, sale('idem-1', 5_000_000n));
    const again = await postEntry(db, sale('idem-1', 5_000_000n));
    expect(first.created).toBe(true);
    expect(again).toEqual({ id: first.id, created: false });
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_postings where entry_id = ${first.id.toString()}::bigint`,
    );
    expect(rows[0]!.n).toBe(2);
  });

  it('error: the same key with different content is an IdempotencyConflict', async () => {
    await postEntry(db, sale('idem-2', 1_000_000n));
    await expect(postEntry(db, sale('idem-2', 1_000_001n))).rejects.toBeInstanceOf(IdempotencyConflictError);
    await expect(
      postEntry(db, { ...sale('idem-2', 1_000_000n), metadata: { amount_cents: 1n } }),
    ).rejects.toBeInstanceOf(IdempotencyConflictError);
  });

  it('error: an unbalanced, one-line or zero-line draft is refused before the database', async () => {
    const bad = sale('bad-1', 10n);
    await expect(
      postEntry(db, { ...bad, lines: [bad.lines[0]!, { ...bad.lines[1]!, amount: -9n }] }),
    ).rejects.toThrow(/does not balance/);
    await expect(postEntry(db, { ...bad, lines: [bad.lines[0]!] })).rejects.toBeInstanceOf(InvalidEntryError);
    await expect(
      postEntry(db, {
        ...bad,
        lines: [...bad.lines, { account: account('expense:service_fees', 'st_a', USDC_BASE), amount: 0n }],
      }),
    ).rejects.toThrow(/zero line/);
  });

  it("behavior: the entry commits or rolls back with the caller's transaction", async () => {
    await expect(
      db.transaction(async (tx) => {
        await postEntry(tx, sale('rolled-back', 7n));
        throw new Error('the fact failed to save');
      }),
    ).rejects.toThrow('the fact failed to save');
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_entries where idempotency_key = 'rolled-back'`,
    );
    expect(rows[0]!.n).toBe(0);
    // The account created inside the rolled-back transaction is gone too, and posting again works.
    expect((await postEntry(db, sale('rolled-back', 7n))).created).toBe(true);
  });

  it('behavior: a rolled-back transaction that posted twice to a new account leaves no stale id in the cache', async () => {
    // A worker's transaction books rule 1 and rule 2 (or two intents of a batch) to an account it
    // created: the second posting reads the account back. If that transaction then rolls back,
    // the id must not stay cached, or every later posting of the process to that account fails
    // its foreign key (seen in the demo: a worker stuck until restart).
    const token = { ...USDC_BASE, chainId: 137, symbol: 'USDC' };
    const cache = createAccountCache();
    const twice = (key: string, amount: bigint): EntryDraft => ({ ...sale(key, amount, undefined, token) });
    await expect(
      db.transaction(async (tx) => {
        await postEntry(tx, twice('cache-rb-1', 3n), { accounts: cache });
        await postEntry(tx, twice('cache-rb-2', 4n), { accounts: cache });
        throw new Error('the batch failed');
      }),
    ).rejects.toThrow('the batch failed');
    expect((await postEntry(db, twice('cache-rb-3', 5n), { accounts: cache })).created).toBe(true);
    expect(await balanceOf('income:sales:st_a:137:USDC')).toBe(-5n);
  });

  it('behavior: 6 and 18 decimal tokens keep exact base units beyond 2^53', async () => {
    const big = 123_456_789_012_345_678_901_234_567n;
    await postEntry(db, sale('bnb-1', big, new Date('2026-11-10T12:00:00Z'), USDT_BNB));
    expect(await balanceOf('income:sales:st_a:56:USDT')).toBe(-big);
  });
});

describe('account decimals', () => {
  // USDC on Ethereum, as the registry had it when the accounts were created (6 decimals), and
  // after a CHAINS_FILE change said 18: the same contract, so the same accounts and asset.
  const six = {
    chainId: 1,
    address: '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48',
    symbol: 'USDC',
    decimals: 6,
  } as const;
  const eighteen = { ...six, decimals: 18 };

  async function written(key: string): Promise<{ entries: number; postings: number }> {
    const { rows } = await db.execute<{ entries: number; postings: number }>(sql`
      select (select count(*)::int from ledger_entries where idempotency_key = ${key}) as entries,
             (select count(*)::int from ledger_postings p join ledger_accounts a on a.id = p.account_id
               where a.chain_id = 1) as postings`);
    return rows[0]!;
  }

  it("error: a posting whose token decimals differ from its account's is refused, and nothing is written", async () => {
    await postEntry(db, sale('dec-6', 1_500_000n, undefined, six));
    const before = await written('dec-18');
    const refused = postEntry(db, sale('dec-18', 1_500_000_000_000_000_000n, undefined, eighteen));
    await expect(refused).rejects.toBeInstanceOf(AccountDecimalsError);
    await expect(refused).rejects.toThrow(
      /account assets:in_transit:st_a:1:USDC .*6 decimals.* 18.*CHAINS_FILE/,
    );
    const err = (await refused.catch((e: unknown) => e)) as AccountDecimalsError;
    expect(err.retryable).toBe(false);
    expect(err).toMatchObject({
      accountCode: 'assets:in_transit:st_a:1:USDC',
      accountDecimals: 6,
      tokenDecimals: 18,
    });
    expect(err.action).toMatch(/CHAINS_FILE/);
    expect(await written('dec-18')).toEqual({ ...before, entries: 0 });
    expect(await balanceOf('income:sales:st_a:1:USDC')).toBe(-1_500_000n);
    // The registry put back, the same token posts again.
    expect((await postEntry(db, sale('dec-6-again', 2n, undefined, six))).created).toBe(true);
  });

  it('error: a cached account is checked from the cache, without a statement', async () => {
    const cache = createAccountCache();
    // The second posting reads the committed accounts and caches them (with their decimals).
    await postEntry(db, sale('dec-cache-1', 1n, undefined, six), { accounts: cache });
    await postEntry(db, sale('dec-cache-2', 1n, undefined, six), { accounts: cache });
    let statements = 0;
    const counted: DbExecutor = {
      _: db._,
      execute: ((query: Parameters<typeof db.execute>[0]) => {
        statements++;
        return db.execute(query);
      }) as typeof db.execute,
    };
    await expect(
      postEntry(counted, sale('dec-cache-18', 10n ** 18n, undefined, eighteen), { accounts: cache }),
    ).rejects.toBeInstanceOf(AccountDecimalsError);
    expect(statements).toBe(0);
    expect((await written('dec-cache-18')).entries).toBe(0);
  });
});

describe('reverseEntry', () => {
  it('behavior: writes the mirror once, linked by reverses_entry_id', async () => {
    const posted = await postEntry(db, sale('rev-1', 3_000_000n));
    const reversal = await reverseEntry(db, posted.id, 'reorg');
    const again = await reverseEntry(db, posted.id, 'a second reason');
    expect(reversal.created).toBe(true);
    expect(again).toEqual({ id: reversal.id, created: false });
    const { rows } = await db.execute<{ kind: string; reverses: string; amounts: string[] }>(sql`
      select e.kind, e.reverses_entry_id::text as reverses, array_agg(p.amount::text order by p.amount) as amounts
      from ledger_entries e join ledger_postings p on p.entry_id = e.id
      where e.id = ${reversal.id.toString()}::bigint group by e.kind, e.reverses_entry_id`);
    expect(rows[0]).toEqual({
      kind: 'checkout.confirmed.reversal',
      reverses: posted.id.toString(),
      amounts: ['-3000000', '3000000'],
    });
  });

  it('behavior: concurrent reversals of one entry write one', async () => {
    const posted = await postEntry(db, sale('rev-2', 1n));
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => db.transaction((tx) => reverseEntry(tx, posted.id, 'race'))),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });
});

describe('balances', () => {
  it('behavior: current, at a time (occurred_at) and after an entry; checkpoints change nothing', async () => {
    const early = await postEntry(
      db,
      sale('bal-1', 100n, new Date('2026-01-01T00:00:00Z'), { ...USDC_BASE, chainId: 10, symbol: 'USDC' }),
    );
    // Recorded later but happened earlier: balances at a time follow occurred_at.
    await postEntry(
      db,
      sale('bal-2', 20n, new Date('2025-12-01T00:00:00Z'), { ...USDC_BASE, chainId: 10, symbol: 'USDC' }),
    );
    await postEntry(
      db,
      sale('bal-3', 3n, new Date('2026-02-01T00:00:00Z'), { ...USDC_BASE, chainId: 10, symbol: 'USDC' }),
    );
    const code = 'income:sales:st_a:10:USDC';
    expect(await balanceOf(code)).toBe(-123n);
    expect(await balanceOf(code, new Date('2025-12-31T00:00:00Z'))).toBe(-20n);
    expect(await balanceOf(code, new Date('2026-01-15T00:00:00Z'))).toBe(-120n);
    expect(await balanceOf(code, { entryId: early.id })).toBe(-100n);
    await checkpointBalances(db);
    expect(await balanceOf(code)).toBe(-123n);
    await postEntry(
      db,
      sale('bal-4', 1000n, new Date('2026-03-01T00:00:00Z'), { ...USDC_BASE, chainId: 10, symbol: 'USDC' }),
    );
    expect(await balanceOf(code)).toBe(-1123n);
    await checkpointBalances(db);
    await checkpointBalances(db);
    expect(await balanceOf(code)).toBe(-1123n);
  });

  it('behavior: a transaction in flight during a checkpoint is counted once it commits', async () => {
    const token = { ...USDC_BASE, chainId: 42161, symbol: 'USDC' };
    // The accounts exist first, so the two writers below do not wait on each other's account insert.
    await postEntry(db, sale('inflight-0', 1n, new Date(), token));
    const client = await pool.connect();
    try {
      await client.query('begin');
      // Started before the checkpoint, committed after it: its postings must still count.
      const { drizzle } = await import('drizzle-orm/node-postgres');
      await postEntry(drizzle(client), sale('inflight-1', 50n, new Date(), token));
      await postEntry(db, sale('inflight-2', 7n, new Date(), token));
      await checkpointBalances(db);
      await client.query('commit');
    } finally {
      client.release();
    }
    expect(await balanceOf('income:sales:st_a:42161:USDC')).toBe(-58n);
    await checkpointBalances(db);
    expect(await balanceOf('income:sales:st_a:42161:USDC')).toBe(-58n);
  });

  it('behavior: per-store listing and a trial balance that nets to zero per asset', async () => {
    const all = await balances(db, { storeId: 'st_a' });
    expect(all.length).toBeGreaterThan(0);
    expect(all.every((b) => b.storeId === 'st_a')).toBe(true);
    expect(await balances(db, { storeId: 'st_nobody' })).toEqual([]);
    const trial = await trialBalance(db);
    expect(trial.length).toBeGreaterThanOrEqual(3);
    for (const line of trial) {
      expect(line.net).toBe(0n);
      expect(line.debits).toBe(-line.credits);
    }
  });
});
