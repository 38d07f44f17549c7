import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { AccountKind, Token } from '../../../src/ledger/accounts.ts';
import { buildReport } from '../../../src/recon/report/buildReport.ts';
import { renderJson } from '../../../src/recon/report/renderJson.ts';
import type { ReconReport } from '../../../src/recon/report/reportModel.ts';
import { reportValuation } from '../../../src/recon/report/reportValuation.ts';
import { postOnDay } from '../../helpers/postOnDay.ts';
import { runCli } from '../../helpers/runCli.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_ETH } from '../../helpers/tokens.ts';

// The report's figures in the functional currency, on real postings and imported rates, against
// figures computed by hand (below, per line). Period [2 Nov, 5 Nov): one sale before it, one after
// it (on a day without a rate), and a second store whose coin has no rate at all.
const { db, url } = await createMigratedDatabase('report_valuation');
const USDT = USDT_ETH;
const PERIOD = { from: new Date('2026-11-02T00:00:00Z'), to: new Date('2026-11-05T00:00:00Z') };
const STORES = [
  { storeId: 'st_a', functionalCurrency: 'EUR', par: new Map<string, string>() },
  { storeId: 'st_b', functionalCurrency: 'EUR', par: new Map<string, string>() },
];

const post = (
  storeId: string,
  key: string,
  day: string,
  token: Token,
  lines: [string, bigint][],
  metadata?: Record<string, unknown>,
) => postOnDay(db, { key, day, storeId, token, lines: lines as [AccountKind, bigint][], metadata });

await db.execute(sql`
  insert into rates (rate_date, asset, currency, rate, source, source_ref) values
    ('2026-11-01', 'USDT', 'EUR', 0.92, 'import', ''), ('2026-11-02', 'USDT', 'EUR', 0.9234, 'import', ''),
    ('2026-11-03', 'USDT', 'EUR', 0.95, 'import', ''), ('2026-11-04', 'USDT', 'EUR', 0.93, 'import', '')`);
// Before the period (0.92): a sale of 10 (9.20), and 20 into custody to suspense (18.40).
await post('st_a', 'c-0', '2026-11-01', USDT, [
  ['assets:in_transit', 10_000_000n],
  ['income:sales', -10_000_000n],
]);
await post('st_a', 't-0', '2026-11-01', USDT, [
  ['assets:custody', 20_000_000n],
  ['assets:suspense', -20_000_000n],
]);
// The worked example of docs/accounting.md (0.9234): 22.81, 0.28, -23.08, rounding -0.01.
await post('st_a', 'c-1', '2026-11-02', USDT, [
  ['assets:in_transit', 24_700_000n],
  ['expense:service_fees', 300_000n],
  ['income:sales', -25_000_000n],
]);
// Priced at 10 EUR at the intent's own rate 0.9 (not the day's 0.95): 11.111111 x 0.9 = 10.00.
await post(
  'st_a',
  'c-2',
  '2026-11-03',
  USDT,
  [
    ['assets:in_transit', 11_111_111n],
    ['income:sales', -11_111_111n],
  ],
  { currency: 44, currency_rate: '0.9', amount_cents: '1000' },
);
// A claim link of 5 funded on 3 Nov (0.95: 4.75), claimed on 4 Nov (0.93: 4.65), its fee 0.5 (0.465, to even 0.46).
await post('st_a', 'l-f', '2026-11-03', USDT, [
  ['assets:claim_pool', 5_000_000n],
  ['assets:custody', -5_000_000n],
]);
await post('st_a', 'l-c', '2026-11-04', USDT, [
  ['expense:payouts', 5_000_000n],
  ['assets:claim_pool', -5_000_000n],
]);
await post('st_a', 'l-fee', '2026-11-04', USDT, [
  ['expense:payout_fees', 500_000n],
  ['assets:custody', -500_000n],
]);
// After the period, on a day without a rate: in no figure, no missing rate of this period.
await post('st_a', 'c-late', '2026-11-05', USDT, [
  ['assets:in_transit', 7_000_000n],
  ['income:sales', -7_000_000n],
]);
// Store st_b sells in USDC, which has no EUR rate.
await post('st_b', 'b-1', '2026-11-03', USDC_BASE, [
  ['assets:in_transit', 3_000_000n],
  ['income:sales', -3_000_000n],
]);

describe('the report in the functional currency', () => {
  it('behavior: revenue, fees, payouts and the FX result of a period equal the figures computed by hand', async () => {
    const [a] = await reportValuation(db, STORES, PERIOD, 'st_a');
    expect(a).toEqual({
      storeId: 'st_a',
      currency: 'EUR',
      closingDate: '2026-11-04',
      // -23.08 - 10.00; the sale of 1 Nov and that of 5 Nov are outside the period.
      revenue: {
        accounts: ['income:sales'],
        tokens: [{ chainId: 1, symbol: 'USDT', amount: '-36.111111' }],
        value: '-33.08',
        unvalued: 0,
      },
      serviceFees: {
        accounts: ['expense:service_fees'],
        tokens: [{ chainId: 1, symbol: 'USDT', amount: '0.3' }],
        value: '0.28',
        unvalued: 0,
      },
      payouts: {
        accounts: ['expense:payouts'],
        tokens: [{ chainId: 1, symbol: 'USDT', amount: '5' }],
        value: '4.65',
        unvalued: 0,
      },
      payoutFees: {
        accounts: ['expense:payout_fees'],
        tokens: [{ chainId: 1, symbol: 'USDT', amount: '0.5' }],
        value: '0.46',
        unvalued: 0,
      },
      fxRounding: { accounts: ['fx:rounding'], tokens: [], value: '-0.01', unvalued: 0 },
      // At 0.93 on 4 Nov:
      //   in transit 45.811111 -> 42.60 against 9.20 + 22.81 + 10.00 = 42.01: +0.59
      //   claim pool 0 -> 0.00 against 4.75 - 4.65 = 0.10: -0.10
      //   custody 14.5 -> 13.485, to even 13.48, against 18.40 - 4.75 - 0.46 = 13.19: +0.29
      //   suspense -20 -> -18.60 against -18.40: -0.20
      fxUnrealised: {
        accounts: [
          'assets:wallet',
          'assets:custody',
          'assets:claim_pool',
          'assets:refund_receivable',
          'assets:suspense',
          'assets:in_transit',
        ],
        tokens: [{ chainId: 1, symbol: 'USDT', amount: '40.311111' }],
        value: '0.58',
        unvalued: 0,
      },
      // 0.58 unrealised, and the rounding line's credit of 0.01.
      fxResult: '0.59',
      missingRates: [],
    });
  });

  it('behavior: a period with a posting no rate values shows its figures unvalued (null), never 0, and the report lists the finding', async () => {
    const valuation = await reportValuation(db, STORES, PERIOD, null);
    expect(valuation.map((v) => v.storeId)).toEqual(['st_a', 'st_b']);
    const b = valuation[1]!;
    expect(b.revenue).toEqual({
      accounts: ['income:sales'],
      tokens: [{ chainId: 8453, symbol: 'USDC', amount: '-3' }],
      value: null,
      unvalued: 1,
    });
    expect(b.fxRounding.value).toBeNull();
    expect(b.fxUnrealised).toMatchObject({ value: null, unvalued: 1 });
    expect(b.fxResult).toBeNull();
    // Nothing paid out: a valued zero, not unvalued.
    expect(b.payouts).toMatchObject({ value: '0.00', unvalued: 0, tokens: [] });
    expect(b.missingRates).toEqual([{ date: '2026-11-03', symbol: 'USDC' }]);
    // st_a's figures do not take st_b's postings.
    expect(valuation[0]!.revenue.value).toBe('-33.08');

    const report = await db.transaction((tx) =>
      buildReport(tx, {
        period: PERIOD,
        storeId: null,
        chains: createChainRegistry(),
        generatedAt: new Date(),
        checks: [],
        proofs: [],
        findingsFullList: null,
        valuation,
      }),
    );
    const json = JSON.parse(renderJson(report)) as ReconReport;
    expect(json.valuation[1]!.revenue.value).toBeNull();
    expect(json.valuation[0]!.fxResult).toBe('0.59');
    const missing = json.findings.new.filter((f) => f.kind === 'valuation_rate_missing');
    expect(missing.map((f) => [f.storeId, f.refId])).toEqual([['st_b', 'st_b:2026-11-03:USDC:EUR']]);
  });

  it('behavior: each fiat figure equals hledger bal -B over the same accounts and dates of the valued export', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'report-valuation-')), 'books.journal');
    const run = await runCli(
      ['export', '--format', 'hledger', '--value', 'EUR', '--store', 'st_a', '--out', file],
      { DATABASE_URL: url },
    );
    expect(run.code, run.stderr).toBe(0);
    const bal = await promisify(execFile)('hledger', [
      '-f',
      file,
      'bal',
      '-B',
      '-b',
      '2026-11-02',
      '-e',
      '2026-11-05',
      '--flat',
      '-N',
      '-O',
      'csv',
    ]);
    const hledger = new Map(
      bal.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(',').map((c) => c.replace(/^"|"$/g, '')) as [string, string]),
    );
    const [a] = await reportValuation(db, STORES, PERIOD, 'st_a');
    expect(hledger.get('Income:sales:st_a:1:USDT')).toBe(`${a!.revenue.value} EUR`);
    expect(hledger.get('Expenses:service_fees:st_a:1:USDT')).toBe(`${a!.serviceFees.value} EUR`);
    expect(hledger.get('Expenses:payouts:st_a:1:USDT')).toBe(`${a!.payouts.value} EUR`);
    expect(hledger.get('Expenses:payout_fees:st_a:1:USDT')).toBe(`${a!.payoutFees.value} EUR`);
    expect(hledger.get('fx:rounding')).toBe(`${a!.fxRounding.value} EUR`);
  });

  it('behavior: a run records the missing rates of its store and days only: another store sharing the currency, or a later day, keeps its finding', async () => {
    // A USDC sale of st_a after the period: the missing rates of days after the period are
    // recorded by a valuation that reaches them, and a report of the earlier period must not
    // resolve them.
    await post('st_a', 'a-late', '2026-11-06', USDC_BASE, [
      ['assets:in_transit', 1_000_000n],
      ['income:sales', -1_000_000n],
    ]);
    await reportValuation(db, STORES, { from: PERIOD.from, to: new Date('2026-11-07T00:00:00Z') }, 'st_a');
    const open = async () =>
      (
        await db.execute<{ id: string; ref_id: string }>(sql`
          select id::text, ref_id from findings
           where kind = 'valuation_rate_missing' and resolved_at is null order by ref_id`)
      ).rows;
    const before = await open();
    // c-late (5 Nov, USDT) and a-late (6 Nov, USDC) have no rate either.
    expect(before.map((f) => f.ref_id)).toEqual([
      'st_a:2026-11-05:USDT:EUR',
      'st_a:2026-11-06:USDC:EUR',
      'st_b:2026-11-03:USDC:EUR',
    ]);
    // The period again, every store, twice: the same findings, the same rows (none resolved and reopened).
    await reportValuation(db, STORES, PERIOD, null);
    await reportValuation(db, STORES, PERIOD, null);
    expect(await open()).toEqual(before);
    const resolved = await db.execute(
      sql`select 1 from findings where kind = 'valuation_rate_missing' and resolved_at is not null`,
    );
    expect(resolved.rows).toHaveLength(0);
  });
});
