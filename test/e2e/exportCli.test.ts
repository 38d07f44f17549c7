import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { balances } from '../../src/ledger/balances.ts';
import { parseDecimalAmount } from '../../src/money/decimalAmount.ts';
import { formatFiat } from '../../src/money/formatFiat.ts';
import { HOSTILE_MEMO, PERIOD_FROM, PERIOD_TO, seedExportScenario } from '../helpers/exportScenario.ts';
import { fiatBalances, tool } from '../helpers/journalTools.ts';
import { runCli } from '../helpers/runCli.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';

/**
 * `stablebooks export`, checked by the real tools: hledger, beancount (bean-check, bean-query) and
 * ledger read each file without error, and their balances at the period's end equal the ledger's
 * own balances() at that time, account by account and commodity by commodity, exactly. The period
 * starts after several entries, so the opening balances carry them; it ends before the last ones.
 * Debian: apt-get install hledger beancount ledger (scripts/ensure-deps.sh).
 */
const { db, url } = await createMigratedDatabase('export_cli');
await seedExportScenario(db);
const dir = mkdtempSync(join(os.tmpdir(), 'stablebooks-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PERIOD = ['--from', PERIOD_FROM.toISOString(), '--to', PERIOD_TO.toISOString()];

async function exportTo(format: string, extra: string[] = PERIOD): Promise<{ file: string; text: string }> {
  const file = join(dir, `books.${format}`);
  const run = await runCli(['export', '--format', format, ...extra, '--out', file], { DATABASE_URL: url });
  expect(run.stderr).toMatch(/entries, \d+ postings and \d+ opening balances written/);
  expect(run.code).toBe(0);
  return { file, text: readFileSync(file, 'utf8') };
}

/** The ledger's balances just before PERIOD_TO (--to is excluded), nonzero only, code -> base units. */
async function expectedBalances(storeId?: string): Promise<Map<string, bigint>> {
  const rows = await balances(db, { storeId, at: new Date(PERIOD_TO.getTime() - 1) });
  return new Map(rows.filter((b) => b.balance !== 0n).map((b) => [b.code, b.balance]));
}

async function decimalsOf(): Promise<Map<string, number>> {
  return new Map((await balances(db)).map((b) => [b.code, b.decimals]));
}

function signedUnits(text: string, decimals: number): bigint {
  const t = text.trim();
  // Python's decimal prints a zero sum of 18-decimal amounts as 0E-18.
  if (/^-?0E-?\d+$/.test(t)) return 0n;
  const negative = t.startsWith('-');
  const units = parseDecimalAmount(negative ? t.slice(1) : t, decimals);
  return negative ? -units : units;
}

/** A tool's balances (tool account name -> decimal text, commodity) as ledger codes -> base units. */
async function asLedgerCodes(
  rows: Array<{ account: string; commodity: string; amount: string }>,
  codeOf: Map<string, string>,
): Promise<Map<string, bigint>> {
  const decimals = await decimalsOf();
  const out = new Map<string, bigint>();
  for (const r of rows) {
    const code = codeOf.get(r.account) ?? r.account;
    const units = signedUnits(r.amount, decimals.get(code) ?? 0);
    if (units !== 0n) out.set(`${code}`, (out.get(code) ?? 0n) + units);
    // The commodity must be the account's token on the account's chain.
    const [, , chain, symbol] = code.split(':').slice(-4);
    if (decimals.has(code)) expect(r.commodity).toBe(`${symbol}.${chain}`);
  }
  return out;
}

/** CSV lines as arrays of fields (the tools' output; RFC 4180 quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  for (const line of text.split('\n').filter((l) => l.trim() !== '')) {
    const fields: string[] = [];
    let field = '';
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quoted) {
        if (c === '"' && line[i + 1] === '"') {
          field += '"';
          i++;
        } else if (c === '"') quoted = false;
        else field += c;
      } else if (c === '"') quoted = true;
      else if (c === ',') {
        fields.push(field);
        field = '';
      } else field += c;
    }
    fields.push(field);
    rows.push(fields.map((f) => f.trim()));
  }
  return rows;
}

describe('stablebooks export, read by the real tools', () => {
  it('behavior: hledger checks the journal strictly and its balances equal the ledger, exactly', async () => {
    const { file, text } = await exportTo('hledger');
    const check = await tool('hledger', ['-f', file, '--strict', 'check']);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
    const codeOf = new Map(
      [...text.matchAll(/^account (\S+) {2}; code: (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    const bal = await tool('hledger', [
      '-f',
      file,
      'balance',
      '--flat',
      '--no-total',
      '--layout=bare',
      '-O',
      'csv',
    ]);
    expect(bal.code).toBe(0);
    const rows = parseCsv(bal.stdout).slice(1);
    const got = await asLedgerCodes(
      rows.map(([account = '', commodity = '', amount = '']) => ({ account, commodity, amount })),
      codeOf,
    );
    expect(got).toEqual(await expectedBalances());
    // Tags: the intent's order id and a transaction hash are queryable.
    const reg = await tool('hledger', ['-f', file, 'register', 'tag:order_id=order-1001', '-O', 'csv']);
    expect(reg.stdout).toContain('pi_eth_1');
  });

  it('behavior: bean-check accepts the beancount file and bean-query balances equal the ledger, exactly', async () => {
    const { file, text } = await exportTo('beancount');
    const check = await tool('bean-check', [file]);
    expect(check.stdout + check.stderr).toBe('');
    expect(check.code).toBe(0);
    const codeOf = new Map(
      [...text.matchAll(/^\d{4}-\d{2}-\d{2} open (\S+) \S+\n {2}code: "([^"]+)"$/gm)].map((m) => [
        m[1] ?? '',
        m[2] ?? '',
      ]),
    );
    const query = await tool('bean-query', [
      '-f',
      'csv',
      file,
      'select account, currency, sum(number) as balance group by account, currency',
    ]);
    expect(query.code).toBe(0);
    const rows = parseCsv(query.stdout).slice(1);
    const got = await asLedgerCodes(
      rows.map(([account = '', commodity = '', amount = '']) => ({ account, commodity, amount })),
      codeOf,
    );
    expect(got).toEqual(await expectedBalances());
    expect(text).toContain(`memo: "${HOSTILE_MEMO.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`);
  });

  it('behavior: ledger reads the journal pedantically and its balances equal the ledger, exactly', async () => {
    const { file, text } = await exportTo('ledger');
    const codeOf = new Map(
      [...text.matchAll(/^account (\S+)\n {4}note (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
    );
    const bal = await tool('ledger', [
      '-f',
      file,
      '--pedantic',
      'balance',
      '--flat',
      '--no-total',
      '--balance-format',
      '%(account)\t%(scrub(display_total))\n',
    ]);
    expect(bal.stderr).toBe('');
    expect(bal.code).toBe(0);
    const rows = bal.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [account = '', total = ''] = line.split('\t');
        const m = /^(-?[\d.]+) "([^"]+)"$/.exec(total.trim());
        return { account, amount: m?.[1] ?? total, commodity: m?.[2] ?? '' };
      });
    expect(await asLedgerCodes(rows, codeOf)).toEqual(await expectedBalances());
  });

  it('behavior: CSV has a row per posting, debits equal credits per commodity, and it sums to the balances', async () => {
    const { text } = await exportTo('csv');
    const [header, ...rows] = parseCsv(text);
    expect(header).toEqual([
      'date',
      'entry_id',
      'description',
      'account',
      'debit',
      'credit',
      'commodity',
      'reference',
    ]);
    const { rows: counted } = await db.execute<{ n: number }>(sql`
      select count(*)::int as n from ledger_postings p join ledger_entries e on e.id = p.entry_id
      where e.occurred_at >= ${PERIOD_FROM.toISOString()}::timestamptz
        and e.occurred_at < ${PERIOD_TO.toISOString()}::timestamptz`);
    const opening = rows.filter((r) => r[7] === 'opening');
    expect(opening.length).toBeGreaterThan(0);
    expect(rows.length - opening.length).toBe(counted[0]?.n);
    const decimals = await decimalsOf();
    const perCommodity = new Map<string, bigint>();
    const perAccount = new Map<string, bigint>();
    for (const [, , , account = '', debit = '', credit = '', commodity = ''] of rows) {
      expect(debit === '' || credit === '').toBe(true);
      const d = decimals.get(account) ?? 0;
      const units = debit !== '' ? parseDecimalAmount(debit, d) : -parseDecimalAmount(credit, d);
      perCommodity.set(commodity, (perCommodity.get(commodity) ?? 0n) + units);
      perAccount.set(account, (perAccount.get(account) ?? 0n) + units);
    }
    expect([...perCommodity.values()].every((sum) => sum === 0n)).toBe(true);
    expect(new Set(perCommodity.keys())).toEqual(new Set(['USDT.1', 'USDT.56', 'USDC.8453']));
    for (const [k, v] of perAccount) if (v === 0n) perAccount.delete(k);
    expect(perAccount).toEqual(await expectedBalances());
  });

  it('behavior: --store exports one store, and without --from there is no opening transaction', async () => {
    const { file, text } = await exportTo('hledger', ['--store', 'st_b']);
    // Without --out the same journal goes to stdout.
    const piped = await runCli(['export', '--format', 'hledger', '--store', 'st_b'], { DATABASE_URL: url });
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(text);
    expect(text).not.toContain('opening balances');
    expect(text).not.toContain(':st_a:');
    const bal = await tool('hledger', [
      '-f',
      file,
      'balance',
      '--flat',
      '--no-total',
      '--layout=bare',
      '-O',
      'csv',
    ]);
    expect(parseCsv(bal.stdout).slice(1)).toEqual([
      ['Assets:in_transit:st_b:8453:USDC', 'USDC.8453', '29.750000'],
      ['Income:sales:st_b:8453:USDC', 'USDC.8453', '-30.000000'],
      ['Expenses:service_fees:st_b:8453:USDC', 'USDC.8453', '0.250000'],
    ]);
  });

  it("behavior: with --value EUR each journal passes its tool's check and every account's fiat balance equals ledger balances --value, to the cent", async () => {
    // Rates of four and five decimals on every day of the scenario: most postings round, the
    // 18-decimal BNB amounts too, and many entries need their fx:rounding line.
    const usdt = ['0.9234', '0.9187', '0.92115', '0.9301', '0.91777', '0.9256', '0.9199', '0.9302'];
    const usdc = ['0.9241', '0.91893', '0.9213', '0.93007', '0.9181', '0.92555', '0.9203', '0.9297'];
    const rates = join(dir, 'rates.csv');
    writeFileSync(
      rates,
      `date,asset,currency,rate\n${usdt
        .map((r, i) => `2026-11-0${i + 1},USDT,EUR,${r}\n2026-11-0${i + 1},USDC,EUR,${usdc[i]}\n`)
        .join('')}`,
    );
    expect((await runCli(['rates', 'import', rates], { DATABASE_URL: url })).code).toBe(0);
    const run = await runCli(['ledger', 'balances', '--value', 'EUR', '--json'], { DATABASE_URL: url });
    expect(run.code, run.stderr).toBe(0);
    const ours = JSON.parse(run.stdout) as {
      accounts: { code: string; value: string | null; unvalued_postings: number }[];
      rounding: Record<string, string>;
      missing_rates: unknown[];
    };
    expect(ours.missing_rates).toEqual([]);
    const minor = (text: string) =>
      text.startsWith('-') ? -parseDecimalAmount(text.slice(1), 2) : parseDecimalAmount(text, 2);
    const rounding = Object.values(ours.rounding).reduce((sum, r) => sum + minor(r), 0n);
    expect(rounding).not.toBe(0n);
    for (const format of ['hledger', 'beancount', 'ledger'] as const) {
      // The whole ledger: an opening transaction would stay in tokens (its value is not recomputed).
      const { file, text } = await exportTo(format, ['--value', 'EUR']);
      const figures = await fiatBalances(format, file, text);
      for (const a of ours.accounts) {
        const got = figures.get(a.code) ?? [];
        // A tool leaves out (or prints as 0) a balance of zero.
        if (a.value === '0.00')
          expect(
            got.filter((f) => !/^-?0(\.0+)?( EUR)?$/.test(f)),
            a.code,
          ).toEqual([]);
        else expect(got, `${format} ${a.code}`).toEqual([`${a.value} EUR`]);
      }
      expect(figures.get('fx:rounding'), format).toEqual([`${formatFiat(rounding, 2)} EUR`]);
    }
  });

  it('error: bad input is one line, exit 2, and nothing written', async () => {
    const out = join(dir, 'refused.journal');
    const cases: Array<[string[], RegExp]> = [
      [['--format', 'xml'], /^stablebooks: option '--format <format>' argument 'xml' is invalid/],
      [['--format', 'hledger', '--from', 'yesterday'], /^stablebooks: --from: yesterday is not a date/],
      [
        ['--format', 'csv', '--from', '2026-11-05', '--to', '2026-11-01'],
        /^stablebooks: --from must be before --to$/,
      ],
      [
        ['--format', 'ledger', '--store', 'st_nope'],
        /^stablebooks: --store: st_nope is not a store of the ledger/,
      ],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(['export', ...args, '--out', out], { DATABASE_URL: url });
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr.trim()).toMatch(message);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(existsSync(out)).toBe(false);
    }
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});
