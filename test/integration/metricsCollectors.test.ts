import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { recordFinding } from '../../src/findings/recordFinding.ts';
import { account } from '../../src/ledger/accounts.ts';
import { postEntry } from '../../src/ledger/postEntry.ts';
import { attachCollectors } from '../../src/metrics/collectors.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';
import { testRedis } from '../helpers/testRedis.ts';
import { USDC_BASE, USDT_BNB } from '../helpers/tokens.ts';

/**
 * The scrape-time metrics (src/metrics/collectors.ts) on a database with rows of every kind, and
 * the rule that keeps the registry bounded: no label value is an id or an amount, and each metric
 * has a bounded number of series whatever the number of rows.
 */
const { db } = await createMigratedDatabase('metrics_collectors');
const redis = testRedis('metrics');
const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
const prefix = redis.prefix.replace(/:$/, '');
const queues = ['webhooks', 'chain', 'polls-st_a', 'polls-st_b'].map(
  (n) => new Queue(n, { connection, prefix }),
);
afterAll(async () => {
  for (const q of queues) await q.obliterate({ force: true });
  await Promise.all(queues.map((q) => q.close()));
  connection.disconnect();
});

const ROWS = 60;
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

async function seed(): Promise<void> {
  for (let i = 0; i < ROWS; i++) {
    const id = `ci_${hex(12)}`;
    const token = i % 2 ? USDC_BASE : USDT_BNB;
    await db.execute(sql`
      insert into checkout_intents (id, store_id, status, tracked_via, tx_hash, amount_coins)
      values (${id}, ${i % 3 ? 'st_a' : 'st_b'}, ${[1, 20, -5, null][i % 4] ?? null}, 'api',
              ${`0x${hex(32)}`}, ${`${i}.${i}`})`);
    await postEntry(db, {
      idempotencyKey: `sale:${id}`,
      kind: i % 5 ? 'checkout.confirmed' : 'chain.payment_proven',
      occurredAt: new Date('2026-11-10T12:00:00Z'),
      storeId: 'st_a',
      ref: { type: 'checkout_intent', id },
      lines: [
        { account: account('assets:in_transit', 'st_a', token), amount: BigInt(1_000_000 + i) },
        { account: account('income:sales', 'st_a', token), amount: -BigInt(1_000_000 + i) },
      ],
      metadata: {},
    });
    await recordFinding(
      db,
      {
        kind: i % 2 ? 'amount_mismatch' : 'reorged_transfer',
        severity: i % 7 ? 'warning' : 'critical',
        ref: { type: 'checkout_intent', id },
        details: { tx_hash: `0x${hex(32)}`, amount: `${i}` },
      },
      'st_a',
    );
    await db.execute(sql`
      insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address, create_outcome, link_status)
      values (${`po_${hex(12)}`}, 'st_a', ${`ref-${hex(8)}`}, ${`${i}.5`}, 1, 8453, ${`0x${hex(20)}`},
              ${i % 3 ? 'created' : 'unknown'}, ${i % 3 ? 'link_sent' : null})`);
  }
  for (const q of queues)
    await q.add('job', { intentId: `ci_${hex(12)}` }, { jobId: `j.${hex(12)}`, delay: 60_000 });
}

/** An id, an address, a hash or an amount: what a label must never carry. */
function looksLikeIdOrAmount(value: string): boolean {
  return (
    /[0-9a-f]{16,}/i.test(value) ||
    /0x[0-9a-f]{6,}/i.test(value) ||
    /\d{10,}/.test(value) ||
    /\d\.\d/.test(value)
  );
}

describe('metrics collectors', () => {
  it('behavior: scrape-time metrics report the rows of the database and the queues', async () => {
    await seed();
    const metrics = createMetrics();
    attachCollectors(metrics, { db, queues });
    const byName = new Map((await metrics.registry.getMetricsAsJSON()).map((m) => [m.name, m]));
    const values = (metricName: string) =>
      (byName.get(metricName)?.values ?? []).map(
        (v): Record<string, string | number> => ({ ...v.labels, value: v.value }),
      );

    expect(values('stablebooks_intents')).toEqual(
      expect.arrayContaining([
        { status: 'CREATED', value: 15 },
        { status: 'CONFIRMED', value: 15 },
        { status: 'TIMEOUT', value: 15 },
        { status: 'UNKNOWN', value: 15 },
      ]),
    );
    expect(values('stablebooks_ledger_entries_total')).toEqual(
      expect.arrayContaining([
        { kind: 'checkout.confirmed', value: 48 },
        { kind: 'chain.payment_proven', value: 12 },
      ]),
    );
    expect(values('stablebooks_ledger_imbalance')).toEqual([{ value: 0 }]);
    const sales = values('stablebooks_ledger_balance').filter((v) => v.account === 'income:sales');
    expect(sales).toHaveLength(2);
    expect(sales.every((v) => Number(v.value) < 0)).toBe(true);
    const findings = values('stablebooks_findings_open');
    expect(findings.reduce((n, v) => n + Number(v.value), 0)).toBe(ROWS);
    expect(findings.filter((v) => v.severity === 'critical').reduce((n, v) => n + Number(v.value), 0)).toBe(
      9,
    );
    expect(values('stablebooks_payouts')).toEqual(
      expect.arrayContaining([
        { create_outcome: 'created', link_status: 'link_sent', value: 40 },
        { create_outcome: 'unknown', link_status: 'none', value: 20 },
      ]),
    );
    expect(values('stablebooks_queue_jobs')).toEqual(
      expect.arrayContaining([
        { queue: 'polls', state: 'delayed', value: 2 },
        { queue: 'webhooks', state: 'delayed', value: 1 },
        { queue: 'chain', state: 'waiting', value: 0 },
      ]),
    );
    expect(values('stablebooks_metrics_scrape_errors_total')).toEqual([]);
  });

  it('behavior: the outbox backlog is reported only while events are delivered (EVENTS_WEBHOOK_URL)', async () => {
    await db.execute(sql`
      insert into event_outbox (event_id, type, occurred_at, payload, delivered_at)
      values ('payment.booked:m1', 'payment.booked', now(), '{}', now()),
             ('payment.booked:m2', 'payment.booked', now(), '{}', null)`);
    const { rows } = await db.execute<{ n: number }>(
      sql`select count(*)::int as n from event_outbox where delivered_at is null and given_up_at is null`,
    );
    const pending = async (eventsDeliveryOn: boolean) => {
      const metrics = createMetrics();
      attachCollectors(metrics, { db, queues, eventsDeliveryOn });
      const json = await metrics.registry.getMetricsAsJSON();
      return json.find((m) => m.name === 'stablebooks_events_outbox_pending')?.values.map((v) => v.value);
    };
    expect(rows[0]?.n).toBeGreaterThan(0);
    expect(await pending(true)).toEqual([rows[0]?.n]);
    // Without delivery every event stays pending until pruned: no backlog, the gauge stays 0.
    expect(await pending(false)).toEqual([0]);
  });

  it('invariant: no label value is an id or an amount, and each metric has a bounded number of series', async () => {
    const metrics = createMetrics();
    attachCollectors(metrics, { db, queues });
    // Touch the process-side metrics too, as the pipeline would.
    metrics.webhooksReceived.inc({ endpoint: 'checkout', outcome: 'stored' });
    metrics.apiRequests.inc({ endpoint: 'getCheckoutIntent', outcome: '0' });
    metrics.chainReorgs.inc({ chain_id: '31337' });
    const all = await metrics.registry.getMetricsAsJSON();
    for (const m of all) {
      expect(m.values.length, m.name).toBeLessThanOrEqual(m.name.startsWith('stablebooks_') ? 60 : 200);
      // le and quantile are bucket bounds; version is nodejs_version_info's Node version.
      for (const v of m.values)
        for (const [label, value] of Object.entries(v.labels))
          if (!['le', 'quantile', 'version'].includes(label))
            expect(looksLikeIdOrAmount(String(value)), `${m.name}{${label}="${value}"}`).toBe(false);
    }
  });

  it('behavior: a scrape storm reads the database once per cache period', async () => {
    const metrics = createMetrics();
    let reads = 0;
    const counting = new Proxy(db, {
      get(target, key, receiver) {
        if (key === 'transaction') reads++;
        return Reflect.get(target, key, receiver);
      },
    });
    attachCollectors(metrics, { db: counting, queues, ttlMs: 60_000 });
    await Promise.all(Array.from({ length: 20 }, () => metrics.registry.metrics()));
    await metrics.registry.metrics();
    expect(reads).toBe(1);
  });

  it('error: a database that cannot answer keeps /metrics up and counts the failure', async () => {
    const metrics = createMetrics();
    const broken = new Proxy(db, {
      get(target, key, receiver) {
        if (key === 'transaction') return () => Promise.reject(new Error('connection refused'));
        return Reflect.get(target, key, receiver);
      },
    });
    attachCollectors(metrics, { db: broken, queues });
    await metrics.registry.metrics();
    // The counter is written during the scrape, so the next scrape (within the cache) shows it.
    const text = await metrics.registry.metrics();
    expect(text).toContain('stablebooks_metrics_scrape_errors_total{source="database"} 1');
  });
});
