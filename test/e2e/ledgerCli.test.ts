import { describe, expect, it } from 'vitest';
import { account } from '../../src/ledger/accounts.ts';
import { postEntry, reverseEntry } from '../../src/ledger/postEntry.ts';
import { runCli } from '../helpers/runCli.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../helpers/tokens.ts';

const { db, url } = await createMigratedDatabase('ledger_cli');

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
