import { execFile } from 'node:child_process';
import { divideRoundHalfEven } from '../../src/money/exactRate.ts';
import { formatFiat } from '../../src/money/formatFiat.ts';

/**
 * The real plain-text accounting tools on an exported file (Debian: apt-get install hledger
 * beancount ledger, scripts/ensure-deps.sh), and their fiat balances from a `--value` export, per
 * ledger account code, as each tool prints them.
 */
export interface ToolRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** A tool's exit code and output, also when it fails (its message is then the evidence). */
export function tool(bin: string, args: string[]): Promise<ToolRun> {
  return new Promise((resolve) => {
    execFile(bin, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function clean(bin: string, args: string[]): Promise<string> {
  const run = await tool(bin, args);
  if (run.code !== 0 || run.stderr !== '')
    throw new Error(`${bin} ${args.join(' ')}: exit ${run.code}\n${run.stderr}${run.stdout}`);
  return run.stdout;
}

/**
 * Per ledger code (the export's `fx:rounding` line under its own name), the amounts of the
 * account's fiat balance, quotes dropped: `['32.81 EUR']`, or `['4.70 EUR', '2.000000 USDC.8453']`
 * where an unvalued entry left tokens. Each tool checks the file first, strictly, and any
 * complaint of a tool throws with its message. With `period` (UTC dates, `to` excluded; no
 * `from`: since the start) only the postings dated in it count, as each tool restricts a query.
 */
export async function fiatBalances(
  format: 'hledger' | 'beancount' | 'ledger',
  file: string,
  text: string,
  fiat: { currency: string; minorUnit: number } = { currency: 'EUR', minorUnit: 2 },
  period?: { from?: string; to: string },
): Promise<Map<string, string[]>> {
  const dates = period ? [...(period.from ? ['-b', period.from] : []), '-e', period.to] : [];
  const figures = new Map<string, string[]>();
  const add = (code: string, amount: string) =>
    figures.set(code, [...(figures.get(code) ?? []), amount.replace(/"/g, '').trim()]);
  if (format === 'hledger') {
    const codeOf = new Map([...text.matchAll(/^account (\S+) {2}; code: (\S+)$/gm)].map((m) => [m[1], m[2]]));
    await clean('hledger', ['-f', file, '--strict', 'check']);
    const csv = await clean('hledger', ['-f', file, 'balance', '-B', '--flat', '-N', '-O', 'csv', ...dates]);
    for (const row of csv.trim().split('\n').slice(1)) {
      const m = /^"([^"]*)","(.*)"$/.exec(row);
      for (const amount of (m?.[2] ?? '').split(', ')) add(codeOf.get(m?.[1]) ?? m?.[1] ?? row, amount);
    }
  } else if (format === 'beancount') {
    const codeOf = new Map(
      [...text.matchAll(/^\d{4}-\d{2}-\d{2} open (\S+) \S+\n {2}code: "([^"]+)"$/gm)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    await clean('bean-check', [file]);
    // A posting's weight is its price (its value) or, without one, its tokens.
    const csv = await clean('bean-query', [
      '-f',
      'csv',
      file,
      `select account, currency(weight) as currency, sum(number(weight)) as value${period ? ` where ${period.from ? `date >= ${period.from} and ` : ''}date < ${period.to}` : ''} group by account, currency order by account, currency`,
    ]);
    for (const row of csv.trim().split('\n').slice(1)) {
      const [account = '', currency = '', value = ''] = row.split(',').map((c) => c.trim());
      const amount =
        currency === fiat.currency
          ? formatFiat(beancountMinor(value, fiat.minorUnit), fiat.minorUnit)
          : value;
      add(codeOf.get(account) ?? account, `${amount} ${currency}`);
    }
  } else {
    const codeOf = new Map([...text.matchAll(/^account (\S+)\n {4}note (\S+)$/gm)].map((m) => [m[1], m[2]]));
    const out = await clean('ledger', [
      '-f',
      file,
      '--pedantic',
      'balance',
      '-B',
      '--flat',
      '--no-total',
      ...dates,
      '--balance-format',
      '%(account)\t%(scrub(display_total))\n',
    ]);
    // A total of two commodities prints its second amount on a line of its own, without the account.
    let code = '';
    for (const row of out.split('\n').filter(Boolean)) {
      const [account, total] = row.includes('\t') ? row.split('\t') : [undefined, row];
      if (account !== undefined) code = codeOf.get(account) ?? account;
      add(code, total ?? '');
    }
  }
  return figures;
}

/**
 * A fiat sum as beancount prints it (Python's decimal: `-0.5600`, `0E-26`, `6.450000000000000000000`)
 * in the currency's minor units. beancount holds a total price as a per-unit price of 28
 * significant digits (docs/decisions.md, "beancount: a total price, not a cost"), so a sum may sit
 * a few units of the 26th digit off the cent; more than 10^-20 off is a real difference: it throws.
 */
function beancountMinor(text: string, minorUnit: number): bigint {
  const m = /^(-?)(\d+)(?:\.(\d*))?(?:E([+-]?\d+))?$/.exec(text);
  if (!m) throw new Error(`bean-query printed ${JSON.stringify(text)}, not a decimal`);
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = m;
  const scale = 40;
  const shift = scale + Number(exponent) - fraction.length;
  if (shift < 0) throw new Error(`bean-query printed ${text}, finer than 10^-${scale}`);
  const units = BigInt(`${sign}${whole}${fraction}`) * 10n ** BigInt(shift);
  const unit = 10n ** BigInt(scale - minorUnit);
  const minor = divideRoundHalfEven(units, unit);
  const off = units - minor * unit;
  if ((off < 0n ? -off : off) >= 10n ** BigInt(scale - 20))
    throw new Error(`bean-query printed ${text}, more than 10^-20 off a whole minor unit`);
  return minor;
}
