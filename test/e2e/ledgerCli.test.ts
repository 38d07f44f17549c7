import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { account } from '../../src/ledger/accounts.ts';
import { postEntry, reverseEntry } from '../../src/ledger/postEntry.ts';
import { rewriteLedgerAsOwner } from '../helpers/ownerRewrite.ts';
import { runCli } from '../helpers/runCli.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../helpers/tokens.ts';

const { db, url, ownerUrl } = await createMigratedDatabase('ledger_cli');

const confirmed = await postEntry(db, {
  idempotencyKey: 'checkout:confirmed:intent-1',
  kind: 'checkout.confirmed',
  occurredAt: new Date('2026-11-01T10:00:00Z'),
  storeId: 'st_a',
  ref: { type: 'checkout_intent', id: 'intent-1' },
  lines: [
    { account: account('assets:in_transit', 'st_a', USDC_BASE), amount: 9_900_000n },
    { account: account('expense:service_fees', 'st_a', USDC_BASE), amount: 100_000n },
    { account: account('income:sales', 'st_a', USDC_BASE), amount: -10_000_000n },
  ],
});
await postEntry(db, {
  idempotencyKey: 'checkout:confirmed:intent-2',
  kind: 'checkout.confirmed',
  occurredAt: new Date('2026-11-05T10:00:00Z'),
  storeId: 'st_b',
  ref: { type: 'checkout_intent', id: 'intent-2' },
  lines: [
    { account: account('assets:in_transit', 'st_b', USDT_BNB), amount: 1_500_000_000_000_000_001n },
    { account: account('income:sales', 'st_b', USDT_BNB), amount: -1_500_000_000_000_000_001n },
  ],
});
await reverseEntry(db, confirmed.id, 'test reversal', { occurredAt: new Date('2026-11-03T00:00:00Z') });

describe('stablebooks ledger', () => {
  it('behavior: balances as a table with exact decimals and symbols, and a zero trial balance', async () => {
    const run = await runCli(['ledger', 'balances'], { DATABASE_URL: url });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/income:sales:st_b:56:USDT\s+income\s+-1\.500000000000000001 USDT/);
    expect(run.stdout).toMatch(/assets:in_transit:st_a:8453:USDC\s+asset\s+0 USDC/);
    expect(run.stdout).toContain('trial balance');
  });

  it('behavior: --store, --at and --json', async () => {
    const run = await runCli(
      ['ledger', 'balances', '--store', 'st_a', '--at', '2026-11-02T00:00:00Z', '--json'],
      {
        DATABASE_URL: url,
      },
    );
    const out = JSON.parse(run.stdout) as {
      accounts: Array<{ code: string; balance: string; balance_decimal: string }>;
    };
    expect(out.accounts.map((a) => [a.code, a.balance, a.balance_decimal])).toEqual([
      ['assets:in_transit:st_a:8453:USDC', '9900000', '9.9'],
      ['expense:service_fees:st_a:8453:USDC', '100000', '0.1'],
      ['income:sales:st_a:8453:USDC', '-10000000', '-10'],
    ]);
  });

  it('behavior: entries by ref with debit and credit lines, reversal linked', async () => {
    const run = await runCli(['ledger', 'entries', '--ref', 'intent-1'], { DATABASE_URL: url });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/checkout\.confirmed\.reversal .*\(reverses #\d+\)/);
    expect(run.stdout).toMatch(/income:sales:st_a:8453:USDC\s+Cr 10 USDC/);
    const json = JSON.parse(
      (await runCli(['ledger', 'entries', '--kind', 'checkout.confirmed', '--json'], { DATABASE_URL: url }))
        .stdout,
    ) as Array<{ ref_id: string }>;
    expect(json.map((e) => e.ref_id)).toEqual(['intent-2', 'intent-1']);
  });

  it('error: bad options are one line and exit non-zero', async () => {
    const bad = await runCli(['ledger', 'balances', '--at', 'yesterday'], { DATABASE_URL: url });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe('stablebooks: --at: yesterday is not an ISO 8601 time');
    const limit = await runCli(['ledger', 'entries', '--limit', '-3'], { DATABASE_URL: url });
    expect(limit.stderr.trim()).toBe('stablebooks: --limit: -3 is not a positive integer');
  });
});

describe('stablebooks ledger seal and verify', () => {
  it('behavior: seal extends the chain; verify recomputes it and checks a published head', async () => {
    const seal = await runCli(['ledger', 'seal'], { DATABASE_URL: url });
    expect(seal.code).toBe(0);
    const head = /head (3:[0-9a-f]{64})/.exec(seal.stdout)?.[1];
    expect(seal.stdout).toContain('sealed 3 entries');
    const verify = await runCli(['ledger', 'verify', '--head', head ?? ''], { DATABASE_URL: url });
    expect(verify.code).toBe(0);
    expect(verify.stdout.trim()).toBe(
      `ok: 3 entries in the chain, every hash matches; head ${head}; the published head ${head} matches`,
    );
    const again = await runCli(['ledger', 'seal'], { DATABASE_URL: url });
    expect(again.stdout).toContain(`sealed 0 entries; head ${head}`);
  });

  it("behavior: after the owner's rewrite with the triggers off, verify names the first entry that no longer matches and exits 3", async () => {
    const before = await runCli(['ledger', 'verify', '--json'], { DATABASE_URL: url });
    const head = (JSON.parse(before.stdout) as { head: string }).head;
    const { rows } = await db.execute<{
      entry_id: string;
      kind: string;
      ref_type: string;
      ref_id: string;
      store_id: string;
    }>(sql`
      select e.id::text as entry_id, e.kind, e.ref_type, e.ref_id, e.store_id
      from ledger_seals s join ledger_entries e on e.id = s.entry_id where s.seq = 2`);
    const second = rows[0];
    if (!second) throw new Error('no second seal');
    await rewriteLedgerAsOwner(ownerUrl, `id = ${second.entry_id}`);

    const run = await runCli(['ledger', 'verify'], { DATABASE_URL: url });
    expect(run.code).toBe(3);
    expect(run.stdout.trim()).toBe(
      `BROKEN at seal 2: entry ${second.entry_id} (${second.kind}, ${second.ref_type} ${second.ref_id}, store ${second.store_id})` +
        ` - entry ${second.entry_id} or its postings differ from what seal 2 covers; 1 seals before it match`,
    );
    const json = JSON.parse(
      (await runCli(['ledger', 'verify', '--json', '--head', head], { DATABASE_URL: url })).stdout,
    );
    expect(json).toMatchObject({ ok: false, verified: 1, broken: { seq: '2', entry_id: second.entry_id } });
  });

  it('error: a malformed --head is one line and exits non-zero', async () => {
    const bad = await runCli(['ledger', 'verify', '--head', '12:abc'], { DATABASE_URL: url });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim()).toBe(
      'stablebooks: --head: 12:abc is not a chain head (seq:hash, e.g. 1042:<64 hex digits>, as a report prints it)',
    );
  });
});
