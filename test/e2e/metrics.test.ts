import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { verifyLedgerChain } from '../../src/ledger/verifyLedgerChain.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { signWebhook } from '../../src/svc/signing/webhookSignature.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The daemon's /metrics over HTTP while the pipeline runs end to end (sandbox on anvil, every
 * role in-process, real PostgreSQL and Redis): a payment moves the intake, API and ledger
 * counters, a forged webhook the rejection counter, a reorg the reorg counter; and no secret is
 * ever on the page.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
const daemon = await pipeline.startDaemon();
const store = pipeline.config.stores[0]!;
const client = pipeline.sandbox.client('st_a', { retry: { maxAttempts: 3 } });
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const rpc = <T = unknown>(method: string, params: unknown[]) => rawRpc<T>(chain.rpcUrl, method, params);
const mine = (blocks: number) => rpc('anvil_mine', [`0x${blocks.toString(16)}`]);

async function scrape(): Promise<string> {
  const res = await fetch(`${daemon.opsUrl}/metrics`);
  expect(res.status).toBe(200);
  return res.text();
}

/** The sum of a metric's samples whose labels include `labels`. */
function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const own = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => own.get(k) === v)) total += Number(m[3]);
  }
  return total;
}

async function waitForMetric(name: string, labels: Record<string, string>, above: number): Promise<number> {
  return pipeline.waitFor(async () => {
    const value = sum(await scrape(), name, labels);
    return value > above ? value : undefined;
  }, 30_000);
}

async function payAndConfirm(): Promise<string> {
  const created = await client.createCheckoutIntent({ stable_coin: 1, amount_cents: 2500n });
  const id = created.allsvc_checkout_intent_id;
  const res = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, { route: 'direct' });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await pipeline.waitFor(async () => {
    const { rows } = await pipeline.db.execute<{ status: number | null }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    return rows[0]?.status === CheckoutStatus.CONFIRMED;
  });
  return id;
}

describe('metrics: /metrics moves as the pipeline runs', () => {
  it('behavior: a payment moves the webhook, API, ledger and intent metrics', async () => {
    const before = await scrape();
    await payAndConfirm();
    await mine(3);
    await waitForMetric(
      'stablebooks_ledger_entries_total',
      { kind: 'chain.payment_proven' },
      sum(before, 'stablebooks_ledger_entries_total', { kind: 'chain.payment_proven' }),
    );
    const after = await scrape();
    expect(sum(after, 'stablebooks_webhooks_received_total', { endpoint: 'checkout' })).toBeGreaterThan(
      sum(before, 'stablebooks_webhooks_received_total', { endpoint: 'checkout' }),
    );
    // The webhook went through one inbox batch: its size and both steps' times are observed.
    const batched = (name: string, labels: Record<string, string> = {}) =>
      sum(after, name, labels) - sum(before, name, labels);
    expect(batched('stablebooks_inbox_batch_webhooks_count')).toBeGreaterThanOrEqual(1);
    expect(batched('stablebooks_inbox_batch_webhooks_sum')).toBe(
      batched('stablebooks_webhooks_received_total', { endpoint: 'checkout' }),
    );
    expect(batched('stablebooks_inbox_batch_seconds_count', { step: 'store' })).toBe(
      batched('stablebooks_inbox_batch_webhooks_count'),
    );
    expect(batched('stablebooks_inbox_batch_seconds_count', { step: 'enqueue' })).toBeGreaterThanOrEqual(1);
    expect(sum(after, 'stablebooks_api_requests_total')).toBeGreaterThan(
      sum(before, 'stablebooks_api_requests_total'),
    );
    expect(sum(after, 'stablebooks_api_request_duration_seconds_count')).toBeGreaterThan(0);
    expect(sum(after, 'stablebooks_ledger_entries_total', { kind: 'checkout.confirmed' })).toBeGreaterThan(
      sum(before, 'stablebooks_ledger_entries_total', { kind: 'checkout.confirmed' }),
    );
    expect(sum(after, 'stablebooks_intents', { status: 'CONFIRMED' })).toBeGreaterThanOrEqual(1);
    expect(sum(after, 'stablebooks_ledger_imbalance')).toBe(0);
    expect(sum(after, 'stablebooks_rpc_requests_total')).toBeGreaterThan(0);
    expect(sum(after, 'stablebooks_chain_head_block')).toBeGreaterThan(0);
    expect(after).toMatch(/stablebooks_queue_jobs\{queue="webhooks",state="completed"\} [1-9]/);
  });

  it("behavior: the daemon's ledger.seal job seals what it booked: the chain covers every entry and verifies, the backlog gauges read 0", async () => {
    const { rows } = await pipeline.db.execute<{ n: number }>(
      sql`select count(*)::int as n from ledger_entries`,
    );
    expect(rows[0]?.n).toBeGreaterThan(0);
    await pipeline.waitFor(async () => {
      const text = await scrape();
      return (
        text.includes('stablebooks_ledger_unsealed_entries 0') &&
        text.includes('stablebooks_ledger_seal_lag_seconds 0')
      );
    }, 30_000);
    const sealed = await pipeline.db.execute<{ entries: number; seals: number }>(sql`
      select (select count(*)::int from ledger_entries) as entries, (select count(*)::int from ledger_seals) as seals`);
    expect(sealed.rows[0]?.seals).toBe(sealed.rows[0]?.entries);
    expect(await verifyLedgerChain(pipeline.db)).toMatchObject({ ok: true, broken: null });
  });

  it('behavior: a forged webhook moves the rejection counter', async () => {
    const before = sum(await scrape(), 'stablebooks_webhooks_rejected_total', { endpoint: 'checkout' });
    const body = JSON.stringify({ event: 'checkout_intent.updated', data: { id: 'forged' } });
    const headers: Record<string, string> = signWebhook({
      secret: 'not-the-store-secret',
      method: 'POST',
      path: '/webhooks/checkout',
      webhookId: randomUUID(),
      body,
      clock: pipeline.sandbox.world.clock,
      nonce: randomUUID(),
    });
    const res = await fetch(`${pipeline.daemonUrl}/webhooks/checkout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-API-Key': store.apiKey, ...headers },
      body,
    });
    expect(res.status).toBe(401);
    expect(sum(await scrape(), 'stablebooks_webhooks_rejected_total', { endpoint: 'checkout' })).toBe(
      before + 1,
    );
  });

  it('behavior: a reorg moves stablebooks_chain_reorgs_total', async () => {
    const labels = { chain_id: String(chain.chainId) };
    const before = sum(await scrape(), 'stablebooks_chain_reorgs_total', labels);
    const id = await payAndConfirm();
    await mine(2);
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{ n: number }>(
        sql`select count(*)::int as n from ledger_entries where ref_id = ${id} and kind = 'chain.payment_proven'`,
      );
      return rows[0]?.n === 1;
    }, 30_000);
    await rpc('anvil_reorg', [3, []]);
    await waitForMetric('stablebooks_chain_reorgs_total', labels, before);
    expect(sum(await scrape(), 'stablebooks_chain_reorg_depth_count', labels)).toBeGreaterThan(0);
  });

  it('invariant: no secret appears on /metrics', async () => {
    const text = await scrape();
    expect(text).not.toContain(store.apiSecret);
    expect(text).not.toContain(pipeline.config.encryptionKey.toString('base64'));
    expect(text).not.toContain(pipeline.config.encryptionKey.toString('hex'));
    expect(text).not.toContain(pipeline.config.databaseUrl);
  });
});
