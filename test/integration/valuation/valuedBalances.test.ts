import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { fiatBalances, tool } from '../../helpers/journalTools.ts';
import { storePoster } from '../../helpers/postOnDay.ts';
import { runCli } from '../../helpers/runCli.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_ETH } from '../../helpers/tokens.ts';

// `ledger balances --value EUR` on real postings and rates: the worked example of
// docs/accounting.md ("Valuation") through the database, an intent's own rate winning over the
// imported one, and a day without a rate left unvalued with its finding.
const { db, url } = await createMigratedDatabase('valued_balances');
const S = 'st_a';

const post = storePoster(db, S);

const dir = mkdtempSync(join(tmpdir(), 'valued-'));
const ratesFile = join(dir, 'rates.csv');
writeFileSync(
  ratesFile,
  'date,asset,currency,rate\n2026-11-02,USDT,EUR,0.9234\n2026-11-03,USDT,EUR,0.95\n2026-11-30,USDT,EUR,0.93\n',
);

async function valued(at: string) {
  const run = await runCli(['ledger', 'balances', '--value', 'EUR', '--at', at, '--json'], {
    DATABASE_URL: url,
  });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as {
    accounts: {
      code: string;
      value: string | null;
      unvalued_postings: number;
      closing_value: string | null;
      unrealised_fx: string | null;
    }[];
    rounding: Record<string, string>;
    missing_rates: { date: string; symbol: string }[];
  };
}

describe('ledger balances --value EUR', () => {
  it('behavior: values the worked example to the cent, holdings revalued at the closing rate, an intent rate over the imported one', async () => {
    expect((await runCli(['rates', 'import', ratesFile], { DATABASE_URL: url })).code).toBe(0);
    await post('c-1', '2026-11-02', USDT_ETH, [
      ['assets:in_transit', 24_700_000n],
      ['expense:service_fees', 300_000n],
      ['income:sales', -25_000_000n],
    ]);
    // Priced at 10 EUR at the service's rate 0.9: 11.111111 USDT, valued at 0.9 (the intent's), not 0.95.
    await post(
      'c-2',
      '2026-11-03',
      USDT_ETH,
      [
        ['assets:in_transit', 11_111_111n],
        ['income:sales', -11_111_111n],
      ],
      {
        currency: 44,
        currency_rate: '0.9',
        amount_cents: '1000',
      },
    );
    const v = await valued('2026-12-01T00:00:00Z');
    const by = new Map(v.accounts.map((a) => [a.code, a]));
    expect(by.get('expense:service_fees:st_a:1:USDT')?.value).toBe('0.28');
    // 22.81 + 10.00 (11.111111 x 0.9 = 9.9999999)
    expect(by.get('assets:in_transit:st_a:1:USDT')).toMatchObject({ value: '32.81', unvalued_postings: 0 });
    expect(by.get('income:sales:st_a:1:USDT')?.value).toBe('-33.08');
    expect(v.rounding).toEqual({ st_a: '-0.01' });
    // 35.811111 USDT x 0.93 = 33.30433..., 33.30 against a cost of 32.81.
    expect(by.get('assets:in_transit:st_a:1:USDT')).toMatchObject({
      closing_value: '33.30',
      unrealised_fx: '0.49',
    });
    expect(v.missing_rates).toEqual([]);
  });

  it('behavior: a day without a rate leaves its postings unvalued (null, not zero) and opens valuation_rate_missing; a late rate resolves it', async () => {
    await post('c-3', '2026-11-04', USDC_BASE, [
      ['assets:in_transit', 5_000_000n],
      ['income:sales', -5_000_000n],
    ]);
    const v = await valued('2026-12-01T00:00:00Z');
    const usdc = v.accounts.find((a) => a.code === 'assets:in_transit:st_a:8453:USDC');
    expect(usdc).toMatchObject({
      value: null,
      unvalued_postings: 1,
      closing_value: null,
      unrealised_fx: null,
    });
    expect(v.missing_rates).toEqual([{ storeId: 'st_a', date: '2026-11-04', symbol: 'USDC' }]);
    const open = await db.execute<{ ref_id: string; store_id: string }>(sql`
      select ref_id, store_id from findings where kind = 'valuation_rate_missing' and resolved_at is null`);
    expect(open.rows).toEqual([{ ref_id: 'st_a:2026-11-04:USDC:EUR', store_id: 'st_a' }]);
    // Valuing an earlier date says nothing about the 4th's rate: its finding stays open.
    await valued('2026-11-03T00:00:00Z');
    const stillOpen = await db.execute<{ ref_id: string }>(sql`
      select ref_id from findings where kind = 'valuation_rate_missing' and resolved_at is null`);
    expect(stillOpen.rows).toEqual([{ ref_id: 'st_a:2026-11-04:USDC:EUR' }]);

    const late = join(dir, 'late.csv');
    writeFileSync(late, 'date,asset,currency,rate\n2026-11-04,USDC,EUR,0.94\n');
    expect((await runCli(['rates', 'import', late], { DATABASE_URL: url })).code).toBe(0);
    const again = await valued('2026-12-01T00:00:00Z');
    expect(again.accounts.find((a) => a.code === 'assets:in_transit:st_a:8453:USDC')?.value).toBe('4.70');
    const still = await db.execute(
      sql`select 1 from findings where kind = 'valuation_rate_missing' and resolved_at is null`,
    );
    expect(still.rows).toHaveLength(0);
  });

  it("behavior: export --format csv --value EUR carries each posting's value, the fx:rounding row, and unvalued (not 0) without a rate", async () => {
    await post('c-4', '2026-11-05', USDC_BASE, [
      ['assets:in_transit', 2_000_000n],
      ['income:sales', -2_000_000n],
    ]);
    const run = await runCli(['export', '--format', 'csv', '--value', 'EUR'], { DATABASE_URL: url });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    expect(header?.slice(-4)).toEqual(['value', 'value_currency', 'rate', 'rate_source']);
    const of = (entryRef: string) =>
      rows.filter((r) => r[7] === entryRef).map((r) => [r[3], r[8], r[10], r[11]]);
    expect(of('c-1')).toEqual([
      ['assets:in_transit:st_a:1:USDT', '22.81', '0.9234', 'import'],
      ['expense:service_fees:st_a:1:USDT', '0.28', '0.9234', 'import'],
      ['income:sales:st_a:1:USDT', '-23.08', '0.9234', 'import'],
      ['fx:rounding', '-0.01', '', 'rounding'],
    ]);
    expect(of('c-2')).toEqual([
      ['assets:in_transit:st_a:1:USDT', '10.00', '0.9', 'intent'],
      ['income:sales:st_a:1:USDT', '-10.00', '0.9', 'intent'],
    ]);
    expect(of('c-4')).toEqual([
      ['assets:in_transit:st_a:8453:USDC', 'unvalued', '', ''],
      ['income:sales:st_a:8453:USDC', 'unvalued', '', ''],
    ]);
  });

  it('behavior: export --format hledger --value EUR passes hledger --strict and bal -B equals ledger balances --value to the cent; an unvalued entry stays in tokens', async () => {
    const { file, text } = await exportValued('hledger');
    await expectFiatBalances(await fiatBalances('hledger', file, text), '.000000');
    const tagged = await tool('hledger', ['-f', file, 'print', 'tag:unvalued']);
    expect(tagged.stdout).toContain('; unvalued: no EUR rate for USDC on 2026-11-05');
  });

  it('behavior: export --format beancount --value EUR passes bean-check and bean-query sum(weight) equals ledger balances --value to the cent; an unvalued entry stays in tokens with its reason', async () => {
    const { file, text } = await exportValued('beancount');
    await expectFiatBalances(await fiatBalances('beancount', file, text), '');
    const why = await tool('bean-query', [
      '-f',
      'csv',
      file,
      "select distinct entry_meta('unvalued') as why where entry_meta('unvalued') != NULL",
    ]);
    expect(why.stdout.trim().split('\n').slice(1)).toEqual(['no EUR rate for USDC on 2026-11-05']);
  });

  it('behavior: export --format ledger --value EUR passes ledger --pedantic and bal -B equals ledger balances --value to the cent; an unvalued entry stays in tokens, tagged', async () => {
    const { file, text } = await exportValued('ledger');
    await expectFiatBalances(await fiatBalances('ledger', file, text), '.000000');
    const tagged = await tool('ledger', [
      '-f',
      file,
      'register',
      '%unvalued',
      '--register-format',
      '%(tag("unvalued"))\n',
    ]);
    expect([...new Set(tagged.stdout.trim().split('\n'))]).toEqual(['no EUR rate for USDC on 2026-11-05']);
  });
});

async function exportValued(format: string): Promise<{ file: string; text: string }> {
  const file = join(dir, `valued.${format}`);
  const run = await runCli(['export', '--format', format, '--value', 'EUR', '--out', file], {
    DATABASE_URL: url,
  });
  expect(run.code, run.stderr).toBe(0);
  return { file, text: readFileSync(file, 'utf8') };
}

/**
 * Every account's fiat balance in a tool equals `ledger balances --value EUR` to the cent: the
 * fully valued ones as that figure alone; the USDC ones, where c-4 (2026-11-05) has no rate, as
 * the valued 4.70 EUR of c-3 and c-4's 2 USDC in tokens, never a zero in EUR; the rounding line as
 * the sum of the entries' fx:rounding lines. `figures` is what the tool printed per ledger code.
 */
async function expectFiatBalances(figures: Map<string, string[]>, usdcDecimals: string) {
  const ours = await valued('2026-12-01T00:00:00Z');
  const valuedAccounts = ours.accounts.filter((a) => a.unvalued_postings === 0);
  expect(valuedAccounts.length).toBeGreaterThanOrEqual(3);
  for (const a of valuedAccounts) expect(figures.get(a.code), a.code).toEqual([`${a.value} EUR`]);
  expect(figures.get('fx:rounding')).toEqual([`${ours.rounding.st_a} EUR`]);
  expect(figures.get('assets:in_transit:st_a:8453:USDC')).toEqual(['4.70 EUR', `2${usdcDecimals} USDC.8453`]);
  expect(figures.get('income:sales:st_a:8453:USDC')).toEqual(['-4.70 EUR', `-2${usdcDecimals} USDC.8453`]);
  // The finding behind the tokens is on record.
  expect(ours.missing_rates).toEqual([{ storeId: 'st_a', date: '2026-11-05', symbol: 'USDC' }]);
  const open = await db.execute<{ ref_id: string }>(sql`
    select ref_id from findings where kind = 'valuation_rate_missing' and resolved_at is null`);
  expect(open.rows).toEqual([{ ref_id: 'st_a:2026-11-05:USDC:EUR' }]);
}
