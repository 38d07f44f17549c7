import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { tool } from '../../helpers/journalTools.ts';
import { storePoster } from '../../helpers/postOnDay.ts';
import { runCli } from '../../helpers/runCli.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_ETH } from '../../helpers/tokens.ts';

// The exports' closing prices (`--value EUR --to TO`): each tool's market value at the period's
// end less its cost is the unrealised FX that `ledger balances --value EUR --at TO` derives, per
// holding account, to the cent.
//
// The amounts are chosen so that no holding's closing value is an exact half cent: valueLedger
// rounds half to even once per account, and a tool rounds its display its own way; a half cent
// would test the tools' rounding, not the prices.
const { db, url } = await createMigratedDatabase('closing_prices');
const S = 'st_a';
const TO = '2026-12-01';

const post = storePoster(db, S);

const dir = mkdtempSync(join(tmpdir(), 'closing-'));
const ratesFile = join(dir, 'rates.csv');
// USDC has a rate for its payment's day and none on the closing day (2026-11-30).
writeFileSync(
  ratesFile,
  'date,asset,currency,rate\n2026-11-02,USDT,EUR,0.9234\n2026-11-04,USDC,EUR,0.94\n2026-11-30,USDT,EUR,0.93\n',
);

await runCli(['rates', 'import', ratesFile], { DATABASE_URL: url });
await post('c-1', '2026-11-02', USDT_ETH, [
  ['assets:in_transit', 24_700_000n],
  ['expense:service_fees', 300_000n],
  ['income:sales', -25_000_000n],
]);
// An intent's own rate (0.9) values its payment, never the coin's closing rate.
await post(
  'c-2',
  '2026-11-03',
  USDT_ETH,
  [
    ['assets:wallet', 11_111_111n],
    ['income:sales', -11_111_111n],
  ],
  { currency: 44, currency_rate: '0.9', amount_cents: '1000' },
);
// On the closing day itself, at its intent's 0.8: its cost must not become the closing price.
await post(
  'c-3',
  '2026-11-30',
  USDT_ETH,
  [
    ['assets:in_transit', 3_000_000n],
    ['income:sales', -3_000_000n],
  ],
  { currency: 44, currency_rate: '0.8', amount_cents: '240' },
);
await post('c-4', '2026-11-04', USDC_BASE, [
  ['assets:in_transit', 5_000_000n],
  ['income:sales', -5_000_000n],
]);

async function ours() {
  const run = await runCli(['ledger', 'balances', '--value', 'EUR', '--at', `${TO}T00:00:00Z`, '--json'], {
    DATABASE_URL: url,
  });
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as {
    accounts: { code: string; value: string | null; unrealised_fx: string | null }[];
  };
}

async function exported(format: 'hledger' | 'beancount' | 'ledger') {
  const file = join(dir, `closing.${format}`);
  const run = await runCli(
    ['export', '--format', format, '--value', 'EUR', '--to', `${TO}T00:00:00Z`, '--out', file],
    { DATABASE_URL: url },
  );
  expect(run.code, run.stderr).toBe(0);
  return { file, text: readFileSync(file, 'utf8') };
}

/** `25.76 EUR` in cents; a signed decimal through the project's exact parser. */
function cents(amount: string): bigint {
  const m = /^(-?)(\d+(?:\.\d+)?) "?EUR"?$/.exec(amount.trim());
  if (!m) throw new Error(`not a EUR amount: ${amount}`);
  const minor = parseDecimalAmount(m[2] as string, 2);
  return m[1] === '-' ? -minor : minor;
}

/** Per ledger code, a tool's balance lines with `flag` (-V or -B) at the period's end. */
async function toolBalances(format: 'hledger' | 'ledger', file: string, text: string, flag: '-V' | '-B') {
  const figures = new Map<string, string[]>();
  if (format === 'hledger') {
    const codeOf = new Map([...text.matchAll(/^account (\S+) {2}; code: (\S+)$/gm)].map((m) => [m[1], m[2]]));
    const run = await tool('hledger', ['-f', file, 'balance', flag, '-e', TO, '--flat', '-N', '-O', 'csv']);
    expect(run.stderr).toBe('');
    for (const row of run.stdout.trim().split('\n').slice(1)) {
      const m = /^"([^"]*)","(.*)"$/.exec(row);
      const code = codeOf.get(m?.[1]) ?? row;
      figures.set(
        code,
        (m?.[2] ?? '').split(', ').map((a) => a.replace(/"/g, '')),
      );
    }
  } else {
    const codeOf = new Map([...text.matchAll(/^account (\S+)\n {4}note (\S+)$/gm)].map((m) => [m[1], m[2]]));
    const run = await tool('ledger', [
      '-f',
      file,
      '--pedantic',
      'balance',
      flag,
      '-e',
      TO,
      '--flat',
      '--no-total',
      '--balance-format',
      '%(account)\t%(scrub(display_total))\n',
    ]);
    expect(run.stderr).toBe('');
    let code = '';
    for (const row of run.stdout.split('\n').filter(Boolean)) {
      const [name, total] = row.includes('\t') ? row.split('\t') : [undefined, row];
      if (name !== undefined) code = codeOf.get(name) ?? name;
      figures.set(code, [...(figures.get(code) ?? []), (total ?? '').replace(/"/g, '').trim()]);
    }
  }
  return figures;
}

describe('export --value EUR --to: closing prices', () => {
  for (const format of ['hledger', 'ledger'] as const)
    it(`behavior: ${format} bal -V less bal -B per holding account equals ledger balances --value's unrealised_fx to the cent; a coin without a closing rate stays in tokens`, async () => {
      const { file, text } = await exported(format);
      expect(text).toContain('P 2026-11-30 "USDT.1" 0.93 "EUR"\n');
      expect(text).not.toMatch(/^P .*"USDC\.8453"/m);
      expect(text).toContain('; no EUR closing rate for USDC.8453 on 2026-11-30');
      if (format === 'hledger')
        expect(await tool('hledger', ['-f', file, '--strict', 'check'])).toMatchObject({
          code: 0,
          stderr: '',
        });
      const V = await toolBalances(format, file, text, '-V');
      const B = await toolBalances(format, file, text, '-B');
      const revalued = (await ours()).accounts.filter((a) => a.unrealised_fx !== null);
      expect(revalued.map((a) => [a.code, a.unrealised_fx])).toEqual([
        // 27.700000 x 0.93 = 25.761 -> 25.76, against 22.81 + 2.40
        ['assets:in_transit:st_a:1:USDT', '0.55'],
        // 11.111111 x 0.93 = 10.33333323 -> 10.33, against 10.00
        ['assets:wallet:st_a:1:USDT', '0.33'],
      ]);
      for (const a of revalued) {
        const [v = '', ...moreV] = V.get(a.code) ?? [];
        const [b = '', ...moreB] = B.get(a.code) ?? [];
        expect([moreV, moreB], a.code).toEqual([[], []]);
        expect((cents(v) - cents(b)).toString(), a.code).toBe(
          (parseDecimalAmount(a.unrealised_fx as string, 2) as bigint).toString(),
        );
      }
      // No closing rate: never 0 EUR. hledger shows the tokens; ledger also takes a price from
      // every posting's cost (its price history), so it values them at their last cost, 0.94.
      expect(V.get('assets:in_transit:st_a:8453:USDC')).toEqual([
        format === 'hledger' ? '5.000000 USDC.8453' : '4.70 EUR',
      ]);
      expect(B.get('assets:in_transit:st_a:8453:USDC')).toEqual(['4.70 EUR']);
    });

  it("behavior: beancount's price directives pass bean-check and convert(sum(position), 'EUR', closing day) less sum(weight) is the unrealised FX; a coin without a closing rate stays in tokens", async () => {
    const { file, text } = await exported('beancount');
    expect(text).toContain('2026-11-30 price USDT.1 0.93 EUR\n');
    expect(text).not.toMatch(/price USDC\.8453/);
    expect(text).toContain('; no EUR closing rate for USDC.8453 on 2026-11-30');
    const check = await tool('bean-check', [file]);
    expect(check.stderr + check.stdout).toBe('');
    expect(check.code).toBe(0);
    const codeOf = new Map(
      [...text.matchAll(/^\d{4}-\d{2}-\d{2} open (\S+) \S+\n {2}code: "([^"]+)"$/gm)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    // bean-query prints an inventory as its display context rounds it: EUR to the cent.
    const query = async (target: string) => {
      const run = await tool('bean-query', [
        '-f',
        'csv',
        file,
        `select account, ${target} as amount group by account order by account`,
      ]);
      expect(run.code, run.stderr).toBe(0);
      return new Map(
        run.stdout
          .trim()
          .split('\n')
          .slice(1)
          .map((row) => {
            const [name = '', ...rest] = row.split(',');
            return [codeOf.get(name.trim()) ?? name.trim(), rest.join(',').trim()] as const;
          }),
      );
    };
    const market = await query("convert(sum(position), 'EUR', 2026-11-30)");
    const cost = await query('sum(weight)');
    for (const a of (await ours()).accounts.filter((x) => x.unrealised_fx !== null))
      expect((cents(market.get(a.code) ?? '') - cents(cost.get(a.code) ?? '')).toString(), a.code).toBe(
        (parseDecimalAmount(a.unrealised_fx as string, 2) as bigint).toString(),
      );
    expect(market.get('assets:in_transit:st_a:8453:USDC')).toMatch(/^5 +USDC\.8453$/);
  });
});
