import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { ledgerLinesOf, startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * Every way a checkout ends, from the sandbox on anvil through the daemon (all roles in-process)
 * to the ledger: the entry of each intent is exactly rule 1 of docs/accounting.md, or nothing
 * (rule 4), and the trial balance nets to zero after each case.
 *
 * Amounts are USDT base units (6 decimals). R requested, P paid, F fee (1% of P, rounded down, on
 * the temporary-wallet route; 0 directly), N = P - F.
 */
const pipeline = await startPipeline();
await pipeline.startDaemon();
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const secret = pipeline.config.stores[0]!.apiSecret;

const R = 25_000_000n; // 25 USDT: amount_cents 2500 of stable coin 1
const feeOf = (route: string, paid: bigint) => (route === 'temp_wallet' ? (paid * 100n) / 10_000n : 0n);

/** The rule-1 lines of docs/accounting.md as ledgerLinesOf prints them; zero lines left out. */
function rule1Lines(r: bigint, p: bigint, f: bigint): string[] {
  const lines: Array<[string, bigint]> = [
    ['assets:in_transit', p - f],
    ['expense:sales_shortfall', r > p ? r - p : 0n],
    ['expense:service_fees', f],
    ['income:sales', -r],
    ['liability:customer_overpayments', p > r ? -(p - r) : 0n],
  ];
  return lines.filter(([, v]) => v !== 0n).map(([code, v]) => `checkout.confirmed: ${code} ${v}`);
}

async function pay(id: string, body: Record<string, unknown>): Promise<void> {
  const res = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** An intent the daemon does not track: it learns of the payment from the webhook alone. */
async function untrackedIntent(): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

/** An intent created through the library: tracked, so the daemon polls it. */
async function trackedIntent(): Promise<string> {
  const { created } = await createIntent(pipeline.payments, 'st_a', { stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function intentRow(id: string) {
  const { rows } = await pipeline.db.execute<{
    status: number | null;
    settled_by: string | null;
    net_income_amount: string | null;
  }>(sql`select status, settled_by, net_income_amount from checkout_intents where id = ${id}`);
  return rows[0];
}

async function waitForStatus(id: string, status: number) {
  return pipeline.waitFor(async () => {
    const row = await intentRow(id);
    return row?.status === status ? row : undefined;
  });
}

async function history(id: string) {
  const { rows } = await pipeline.db.execute<{ from: number | null; to: number; source: string }>(sql`
    select from_status as "from", to_status as "to", source
    from checkout_intent_status_history where intent_id = ${id} order by id`);
  return rows;
}

async function postedLines(id: string): Promise<string[]> {
  return pipeline.waitFor(async () => {
    const lines = await ledgerLinesOf(pipeline.db, id);
    return lines.length > 0 ? lines : undefined;
  });
}

async function expectTrialBalanceZero(): Promise<void> {
  for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
}

/** The status history is a chain (each change starts where the last ended) from `first` to `last`. */
async function expectHistoryChain(id: string, first: string, last: { to: number; source: string }) {
  const rows = await history(id);
  expect(rows[0]).toEqual({ from: null, to: CheckoutStatus.CREATED, source: first });
  expect(rows.at(-1)).toMatchObject(last);
  for (let i = 1; i < rows.length; i++) expect(rows[i]!.from).toBe(rows[i - 1]!.to);
}

describe('payments outcomes: confirmed intents post rule 1 (webhook path)', () => {
  const cases: Array<[string, string, Record<string, unknown>, bigint]> = [
    ['exact through the temporary wallet', 'temp_wallet', {}, R],
    ['exact, paid directly', 'direct', {}, R],
    ['overpaid through the temporary wallet', 'temp_wallet', { amount: '31.5' }, 31_500_000n],
    ['overpaid, paid directly', 'direct', { amount: '26' }, 26_000_000n],
    [
      'underpaid and confirmed by the service, through the temporary wallet',
      'temp_wallet',
      { amount: '24.5', accept_underpayment: true },
      24_500_000n,
    ],
    [
      'underpaid and confirmed by the service, paid directly',
      'direct',
      { amount: '20', accept_underpayment: true },
      20_000_000n,
    ],
  ];

  it.each(cases)('behavior: %s posts the rule-1 lines once', async (_name, route, body, paid) => {
    const id = await untrackedIntent();
    await pay(id, { route, ...body });
    const lines = await postedLines(id);
    expect(lines).toEqual(rule1Lines(R, paid, feeOf(route, paid)));
    const row = await waitForStatus(id, CheckoutStatus.CONFIRMED);
    expect(row.settled_by).toBe('webhook');
    // Only the webhook told the daemon: the first record of the intent is the confirmation.
    expect(await history(id)).toEqual([{ from: null, to: CheckoutStatus.CONFIRMED, source: 'webhook' }]);
    const inbox = await pipeline.db.execute<{ status: string }>(sql`
      select status from webhook_inbox where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = ${id}`);
    expect(inbox.rows.map((r) => r.status)).toEqual(['processed']);
    await expectTrialBalanceZero();
  });
});

describe('payments outcomes: failures post nothing (rule 4, poll path)', () => {
  it.each([
    ['through the temporary wallet', 'temp_wallet'],
    ['paid directly', 'direct'],
  ])('behavior: underpaid and sent back %s records UNDERPAID, no entry', async (_name, route) => {
    const id = await trackedIntent();
    await pay(id, { route, amount: '12' });
    await waitForStatus(id, CheckoutStatus.UNDERPAID);
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    await expectHistoryChain(id, 'create', { to: CheckoutStatus.UNDERPAID, source: 'poll' });
    expect((await intentRow(id))?.settled_by).toBe('poll');
    await expectTrialBalanceZero();
  });

  it('behavior: KYT rejection records REJECTED with its history, no entry', async () => {
    const id = await trackedIntent();
    await pay(id, { outcome: 'rejected' });
    const row = await waitForStatus(id, CheckoutStatus.REJECTED);
    expect(row.settled_by).toBe('poll');
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    await expectHistoryChain(id, 'create', { to: CheckoutStatus.REJECTED, source: 'poll' });
    // No webhook for a rejection: the poller alone learnt it.
    const inbox = await pipeline.db.execute(sql`
      select 1 from webhook_inbox where convert_from(body, 'UTF8')::jsonb->>'all_svc_checkout_intent_id' = ${id}`);
    expect(inbox.rows).toEqual([]);
    await expectTrialBalanceZero();
  });

  it('error: fee arithmetic mismatch (N != P - F) posts nothing and records a finding', async () => {
    const id = await untrackedIntent();
    // P = 25, F = 0.25, so N should be 24.75; the service reports 24.7.
    await pay(id, { reported_net_income: '24.7' });
    const row = await waitForStatus(id, CheckoutStatus.CONFIRMED);
    expect(row.net_income_amount).toBe('24.7');
    const finding = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ severity: string; details: Record<string, unknown> }>(sql`
        select severity, details from findings
        where kind = 'fee_arithmetic_mismatch' and ref_type = 'checkout_intent' and ref_id = ${id}`);
      return rows[0];
    });
    expect(finding.details).toMatchObject({
      actual_paid_amount: '25',
      service_fee_amount: '0.25',
      net_income_amount: '24.7',
      expected_net_income_amount: '24.75',
      posted: false,
    });
    expect(await ledgerLinesOf(pipeline.db, id)).toEqual([]);
    await expectTrialBalanceZero();
  });
});

describe('payments outcomes: secrets', () => {
  it('security: the store api_secret never appears in the daemon logs', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.filter((line) => line.includes(secret))).toEqual([]);
  });
});
