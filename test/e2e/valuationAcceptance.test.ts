import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/loadConfig.ts';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { divideRoundHalfEven, parseExactRate } from '../../src/money/exactRate.ts';
import { formatFiat } from '../../src/money/formatFiat.ts';
import { type CreatePayoutTuning, createPayout } from '../../src/payouts/createPayout.ts';
import type { ReconReport } from '../../src/recon/report/reportModel.ts';
import type { CreateCheckoutIntentInput } from '../../src/svc/client.ts';
import { Currency } from '../../src/svc/models/currency.ts';
import { daemonEnvForConfig } from '../helpers/daemonProcess.ts';
import { fiatBalances, tool } from '../helpers/journalTools.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';
import { runCli } from '../helpers/runCli.ts';

/**
 * Issue 34's acceptance, end to end: a store whose books close in EUR takes USDT and USDC over
 * three days (the sandbox's clock and the chain's time moved on a day at a time), one payment
 * priced in EUR carrying the service's own currency_rate, and a payout; the merchant imports daily
 * rates; the period ends. With one day's USDC rate missing, the report and the exports show that
 * line unvalued (a finding, null, tokens in the tools' balances; never a zero). Once it is
 * imported, the report's fiat figures equal, to the cent, what hledger (bal -B), bean-query and
 * ledger (-B) compute from the exports over the same accounts and period.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
const DAY = 86_400;
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const CHAIN = chain.chainId;
const rpc = <T = unknown>(method: string, params: unknown[]) => rawRpc<T>(chain.rpcUrl, method, params);
const mine = (blocks: number) => rpc('anvil_mine', [`0x${blocks.toString(16)}`]);

/** The sandbox's clock and the chain's block time move on together (entries are dated on both). */
async function advance(seconds: number): Promise<void> {
  const res = await pipeline.sandbox.control('/_sandbox/clock/advance', { seconds });
  expect(res.status).toBe(200);
  await rpc('evm_increaseTime', [seconds]);
  await mine(1);
}

// Day 1 starts at the next UTC midnight; everything happens in the first hours of each day.
const start = pipeline.sandbox.world.clock.now();
const day0 = Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate());
const dayText = (n: number) => new Date(day0 + n * DAY * 1000).toISOString().slice(0, 10);
const [D0, D1, D2, D3, D4] = [0, 1, 2, 3, 4].map(dayText) as [string, string, string, string, string];

const config: Config = {
  ...pipeline.config,
  stores: pipeline.config.stores.map((s) => ({ ...s, functionalCurrency: 'EUR' })),
};
const env = { ...daemonEnvForConfig(config), CLOCK_URL: `${pipeline.sandbox.url}/_sandbox/clock` };
await pipeline.startDaemon(undefined, { config: { stores: config.stores } });
const client = pipeline.sandbox.client('st_a', {
  retry: { maxAttempts: 3 },
  clock: pipeline.sandbox.world.clock,
});
const dir = mkdtempSync(join(tmpdir(), 'sb-valuation-acceptance-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * EUR per coin. Day 0 values what the daemon finds on the chain before the scenario (the sandbox's
 * opening funds; the day before too, should the pipeline have started just before midnight). Day
 * 2's USDC rate is imported late. Day 2's USDT rate (0.9312) is not the EUR
 * intent's own rate (the sandbox's 0.92), so the test can tell which one valued it.
 */
const RATES: [string, 'USDT' | 'USDC', string][] = [
  [dayText(-1), 'USDT', '0.9101'],
  [dayText(-1), 'USDC', '0.9103'],
  [D0, 'USDT', '0.9101'],
  [D0, 'USDC', '0.9103'],
  [D1, 'USDT', '0.9234'],
  [D1, 'USDC', '0.9241'],
  [D2, 'USDT', '0.9312'],
  [D3, 'USDT', '0.9358'],
  [D3, 'USDC', '0.9333'],
];
const LATE_RATE: [string, 'USDC', string] = [D2, 'USDC', '0.9287'];
const CLOSING = { USDT: '0.9358', USDC: '0.9333' } as const;

async function importRates(name: string, rows: [string, string, string][]): Promise<void> {
  const file = join(dir, name);
  writeFileSync(
    file,
    `date,asset,currency,rate\n${rows.map(([d, a, r]) => `${d},${a},EUR,${r}`).join('\n')}\n`,
  );
  const run = await runCli(['rates', 'import', file], env);
  expect(run.code, run.stderr).toBe(0);
}

async function entriesOf(refId: string): Promise<{ kind: string; day: string }[]> {
  const { rows } = await pipeline.db.execute<{ kind: string; day: string }>(sql`
    select kind, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD') as day
      from ledger_entries where ref_id = ${refId} order by id`);
  return rows;
}

/** Waits (mining a block per look, so transfers become final) until `refId` has an entry of each kind. */
async function booked(refId: string, kinds: string[]): Promise<{ kind: string; day: string }[]> {
  return pipeline.waitFor(async () => {
    await mine(1);
    const entries = await entriesOf(refId);
    return kinds.every((k) => entries.some((e) => e.kind === k)) ? entries : undefined;
  }, 40_000);
}

/** A paid checkout intent (rule 1 and rule 2 booked), and the service's view of it. */
async function paidIntent(
  request: CreateCheckoutIntentInput,
  day: string,
): Promise<{ id: string; currencyRate: string | null; amount: string }> {
  const created = await client.createCheckoutIntent(request);
  const id = created.allsvc_checkout_intent_id;
  const paid = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, {});
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  const entries = await booked(id, ['checkout.confirmed', 'chain.payment_proven']);
  // Every entry of the payment is dated on its scenario day.
  expect(entries.map((e) => e.day)).toEqual(entries.map(() => day));
  const intent = await client.getCheckoutIntent(id);
  return { id, currencyRate: intent.currency_rate ?? null, amount: intent.amount_coins };
}

/** A fiat amount as a tool prints it ("-23.08 EUR", with or without a thousands comma) in cents. */
function cents(amount: string): bigint {
  const m = /^(-?)([\d,]+)\.(\d{2}) EUR$/.exec(amount);
  if (!m) throw new Error(`${JSON.stringify(amount)} is not an amount in EUR cents`);
  return BigInt(`${m[1]}${m[2]!.replace(/,/g, '')}${m[3]}`);
}

/**
 * A report figure as a tool computes it: the EUR total of the accounts whose code starts with one
 * of `prefixes` (every coin), in cents; null when a tool left tokens there (unvalued).
 */
function toolFigure(balances: Map<string, string[]>, prefixes: string[]): string | null {
  let total = 0n;
  for (const [code, amounts] of balances) {
    if (!prefixes.some((p) => code === p || code.startsWith(`${p}:`))) continue;
    for (const amount of amounts) {
      if (/^-?0(\.0+)?$/.test(amount)) continue;
      if (!amount.endsWith(' EUR')) return null;
      total += cents(amount);
    }
  }
  return formatFiat(total, 2);
}

async function exportBooks(format: 'hledger' | 'beancount' | 'ledger', tag: string) {
  const file = join(dir, `${tag}.${format}`);
  const run = await runCli(
    ['export', '--format', format, '--value', 'EUR', '--store', 'st_a', '--out', file],
    env,
  );
  expect(run.code, run.stderr).toBe(0);
  return { file, text: readFileSync(file, 'utf8') };
}

async function report(tag: string): Promise<ReconReport['valuation'][number]> {
  const out = join(dir, tag);
  const run = await runCli(
    ['report', '--from', D1, '--to', D4, '--format', 'json', '--out', out, '--json'],
    env,
    { timeoutMs: 90_000 },
  );
  expect([0, 3], run.stderr).toContain(run.code);
  const json = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as ReconReport;
  expect(json.valuation.map((v) => v.storeId)).toEqual(['st_a']);
  const v = json.valuation[0]!;
  expect(v).toMatchObject({ currency: 'EUR', closingDate: D3 });
  return v;
}

async function missingRateFindings(): Promise<{ refId: string; resolvedAt: string | null }[]> {
  const run = await runCli(['findings', 'list', '--kind', 'valuation_rate_missing', '--json'], env);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { refId: string; resolvedAt: string | null }[]).sort((a, b) =>
    a.refId.localeCompare(b.refId),
  );
}

// The scenario. Day 1: a USDT and a USDC payment, priced in their own coin.
await advance(Math.ceil((day0 + DAY * 1000 - start.getTime()) / 1000) + 3600);
const usdt1 = await paidIntent({ stable_coin: 1, amount_cents: 1999n }, D1);
const usdc1 = await paidIntent({ stable_coin: 2, amount_cents: 1234n }, D1);
// Day 2: a payment priced at 10.00 EUR (paid in USDT at the service's rate) and a USDC payment.
await advance(DAY);
const eur2 = await paidIntent({ currency: Currency.EUR, amount_cents: 1000n }, D2);
const usdc2 = await paidIntent({ stable_coin: 2, amount_cents: 1001n }, D2);
// Day 3: a payout of 5 USDT through a claim link, claimed.
await advance(DAY);
const deps: DomainContext & CreatePayoutTuning = {
  ...pipeline.payments,
  client: () =>
    pipeline.sandbox.client('st_a', { retry: { maxAttempts: 1 }, clock: pipeline.sandbox.world.clock }),
  sleep: async () => {},
};
const { payout } = await createPayout(deps, {
  storeId: 'st_a',
  amount: '5',
  coin: 'USDT',
  chain: CHAIN,
  referenceId: `acceptance-${Date.now().toString(36)}`,
});
const linkId = payout.claimLinkId!;
await booked(linkId, ['claim_link.funded', 'claim_link.funding_fee']);
await pipeline.waitFor(async () => {
  const res = await pipeline.sandbox.control<{ status: string }>(`/_sandbox/claim_links/${linkId}`);
  return res.body.status === 'link_sent';
});
const claimed = await pipeline.sandbox.control(`/_sandbox/claim_links/${linkId}/claim`, {});
expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
const linkEntries = await booked(linkId, ['claim_link.claimed']);
expect(linkEntries.map((e) => e.day)).toEqual(linkEntries.map(() => D3));
// The period ends: the report runs on day 4.
await advance(DAY);
await mine(3);

describe('issue 34 acceptance: books in EUR over three days', () => {
  it('behavior: a missing rate is a finding and an unvalued line in the report and in each tool, never a zero', async () => {
    await importRates('rates.csv', RATES);
    const v = await report('before');
    const finding = `st_a:${D2}:USDC:EUR`;
    const open = await missingRateFindings();
    expect(open.filter((f) => f.resolvedAt === null).map((f) => f.refId)).toEqual([finding]);
    expect(v.missingRates).toEqual([{ date: D2, symbol: 'USDC' }]);
    // Revenue holds day 2's USDC sale: unvalued, not a figure, and surely not "0.00".
    expect(v.revenue.value).toBeNull();
    expect(v.revenue.unvalued).toBeGreaterThanOrEqual(1);
    expect(v.revenue.tokens).toContainEqual({
      chainId: CHAIN,
      symbol: 'USDC',
      amount: `-${sum(usdc1.amount, usdc2.amount)}`,
    });
    expect(v.fxResult).toBeNull();
    // Payouts are USDT only: valued.
    expect(v.payouts.value).not.toBeNull();

    // Each tool sees the unvalued sale in tokens, beside the EUR of the valued ones, and the
    // export says why: a figure summed over the account is no EUR total at all.
    const usdcSales = `income:sales:st_a:${CHAIN}:USDC`;
    for (const format of ['hledger', 'beancount', 'ledger'] as const) {
      const { file, text } = await exportBooks(format, 'before');
      expect(text).toContain(`no EUR rate for USDC on ${D2}`);
      const balances = await fiatBalances(format, file, text, undefined, { from: D1, to: D4 });
      const amounts = balances.get(usdcSales) ?? [];
      expect(
        amounts.map((a) => a.replace(/^(-?[\d.,]+) /, '')),
        `${format}: ${amounts}`,
      ).toEqual(['EUR', `USDC.${CHAIN}`]);
      // Exactly day 2's sale in tokens; day 1's in EUR.
      expect(units(amounts[1]!.split(' ')[0]!), `${format}: ${amounts}`).toBe(-units(usdc2.amount));
      expect(amounts[0], format).toBe(`-${eurValue(usdc1.amount, '0.9241')} EUR`);
      expect(toolFigure(balances, ['income:sales']), format).toBeNull();
    }
  });

  it('behavior: with every rate imported the finding resolves and the report equals hledger, bean-query and ledger to the cent', async () => {
    await importRates('late.csv', [LATE_RATE]);
    const v = await report('after');
    expect(v.missingRates).toEqual([]);
    const findings = await missingRateFindings();
    expect(findings.filter((f) => f.resolvedAt === null)).toEqual([]);
    expect(findings.map((f) => f.refId)).toContain(`st_a:${D2}:USDC:EUR`);

    // The EUR intent is valued at its own rate (the service's, coin = fiat / rate), not day 2's import.
    expect(eur2.currencyRate).toBe('0.92');
    const own = eurValue(eur2.amount, eur2.currencyRate!);
    const imported = eurValue(eur2.amount, '0.9312');
    expect(own).toBe('10.00');
    expect(imported).not.toBe(own);

    // Revenue by hand: each sale at its own day's rate (the EUR one at its own rate), rounded per posting.
    const revenue = -[
      eurCents(usdt1.amount, '0.9234'),
      eurCents(usdc1.amount, '0.9241'),
      eurCents(eur2.amount, eur2.currencyRate!),
      eurCents(usdc2.amount, LATE_RATE[2]),
    ].reduce((a, b) => a + b, 0n);
    expect(v.revenue).toMatchObject({ value: formatFiat(revenue, 2), unvalued: 0 });
    // The payout of 5 USDT and its funding fee of 0.5 USDT, on day 3.
    expect(v.payouts).toMatchObject({ value: eurValue('5', '0.9358'), unvalued: 0 });
    expect(v.payoutFees).toMatchObject({ value: eurValue('0.5', '0.9358'), unvalued: 0 });
    for (const figure of [v.serviceFees, v.fxRounding, v.fxUnrealised]) expect(figure.unvalued).toBe(0);
    // The amounts are chosen so that entries need rounding lines (1999 at 0.9234, 1001 at 0.9287).
    expect(v.fxRounding.value).toBe('0.02');
    expect(v.fxResult).not.toBeNull();

    const figures = {
      revenue: ['income:sales'],
      serviceFees: ['expense:service_fees'],
      payouts: ['expense:payouts'],
      payoutFees: ['expense:payout_fees'],
      fxRounding: ['fx:rounding'],
    } as const;
    const reported = Object.fromEntries(
      Object.keys(figures).map((k) => [k, v[k as keyof typeof figures].value]),
    );
    for (const format of ['hledger', 'beancount', 'ledger'] as const) {
      const { file, text } = await exportBooks(format, 'after');
      const balances = await fiatBalances(format, file, text, undefined, { from: D1, to: D4 });
      const computed = Object.fromEntries(
        Object.entries(figures).map(([k, prefixes]) => [k, toolFigure(balances, [...prefixes])]),
      );
      expect(computed, format).toEqual(reported);
      // The period end, from the tool's books: each holding's closing tokens at day 3's rate,
      // less its cost (its valued balance), is the unrealised result; less the rounding, the FX result.
      if (format === 'hledger') {
        const cost = await fiatBalances(format, file, text, undefined, { to: D4 });
        const held = await tool('hledger', [
          '-f',
          file,
          'bal',
          '-e',
          D4,
          '--flat',
          '-N',
          '-O',
          'csv',
          '^assets:',
        ]);
        expect(held.code, held.stderr).toBe(0);
        const closing = new Map<string, bigint>();
        for (const row of held.stdout.trim().split('\n').slice(1)) {
          const m = /^"Assets:([^"]+)","(-?[\d.]+) ""(USDT|USDC)\.\d+"""$/.exec(row);
          expect(m, row).not.toBeNull();
          closing.set(`assets:${m![1]}`, eurCents(m![2]!, CLOSING[m![3] as 'USDT' | 'USDC']));
        }
        let unrealised = 0n;
        const holdings = new Set([
          ...closing.keys(),
          ...[...cost.keys()].filter((c) => c.startsWith('assets:')),
        ]);
        for (const code of holdings) {
          const [valued = '0'] = cost.get(code) ?? [];
          unrealised += (closing.get(code) ?? 0n) - (/^-?0$/.test(valued) ? 0n : cents(valued));
        }
        expect(formatFiat(unrealised, 2)).toBe(v.fxUnrealised.value);
        expect(formatFiat(unrealised - cents(`${computed.fxRounding} EUR`), 2)).toBe(v.fxResult);
      }
      if (format === 'hledger') {
        // The EUR intent's own sale line, as hledger values it.
        const bal = await tool('hledger', [
          '-f',
          file,
          'bal',
          '-B',
          '--flat',
          '-N',
          '-O',
          'csv',
          'income:sales',
          `desc:${eur2.id}`,
        ]);
        expect(bal.code, bal.stderr).toBe(0);
        expect(bal.stdout.trim().split('\n').slice(1)).toEqual([
          expect.stringMatching(new RegExp(`,"-${own} EUR"$`)),
        ]);
      }
    }
  });
});

/** A coin amount with up to 6 decimals (as the service or a tool prints it) in base units. */
function units(amount: string): bigint {
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(amount);
  if (!m) throw new Error(`${JSON.stringify(amount)} is not a decimal amount`);
  const fraction = (m[3] ?? '').replace(/0+$/, '');
  if (fraction.length > 6) throw new Error(`${amount} is finer than 6 decimals`);
  return BigInt(`${m[1]}${m[2]}${fraction.padEnd(6, '0')}`);
}

function sum(a: string, b: string): string {
  const total = (units(a) + units(b)).toString().padStart(7, '0');
  return `${total.slice(0, -6)}.${total.slice(-6)}`.replace(/\.?0+$/, '');
}

/** A coin amount (6 decimals) at `rate` EUR per coin, in cents, rounded half to even. */
function eurCents(amount: string, rate: string): bigint {
  const r = parseExactRate(rate)!;
  return divideRoundHalfEven(units(amount) * r.numerator * 100n, r.denominator * 1_000_000n);
}

function eurValue(amount: string, rate: string): string {
  return formatFiat(eurCents(amount, rate), 2);
}
