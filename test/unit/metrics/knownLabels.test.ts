import { describe, expect, it } from 'vitest';
import { QUEUE } from '../../../jobs/queues.ts';
import { NOTIFIER_NAMES } from '../../../src/alerts/routes.ts';
import { systemClock } from '../../../src/clock.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { Config } from '../../../src/config/loadConfig.ts';
import type { StoreConfig } from '../../../src/config/stores.ts';
import type { DeliveryOutcome } from '../../../src/events/deliverEvents.ts';
import { registerIntakeRoutes } from '../../../src/intake/intakeRoutes.ts';
import { type IntakeDeps, receiveWebhook } from '../../../src/intake/receiveWebhook.ts';
import {
  ALERT_NOTIFIERS,
  EVENT_DELIVERY_OUTCOMES,
  INTAKE_ERROR_REASONS,
  initialiseLabels,
  JOB_QUEUES,
  type LabelConfig,
  WEBHOOK_ENDPOINTS,
  WEBHOOK_REJECT_REASONS,
} from '../../../src/metrics/knownLabels.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';

/**
 * A fresh registry exports the labelled metrics the dashboards and alert rules read at zero, from
 * the start, once initialiseLabels has run: prom-client leaves a labelled metric out of /metrics
 * until a series of it is counted, so rate() and absent() would see nothing until the first event.
 */

// The outbound events' delivery outcomes are exactly the known ones, both ways.
const _outcomesKnown: readonly DeliveryOutcome[] = EVENT_DELIVERY_OUTCOMES;
const _outcomesAll = (o: DeliveryOutcome): (typeof EVENT_DELIVERY_OUTCOMES)[number] => o;

// src/config's Config is a LabelConfig: the daemon passes its configuration as it is.
const _configFits: (c: Config) => LabelConfig = (c) => c;

const wallet = {
  merchant: '0x1111111111111111111111111111111111111111',
  custody: '0x2222222222222222222222222222222222222222',
};
const config: LabelConfig = {
  rpcUrls: new Map([
    [8453, ['http://rpc.invalid']],
    [1, ['http://rpc.invalid']],
  ]),
  stores: [{ wallets: new Map([[8453, wallet]]) }, { wallets: new Map([[8453, wallet]]) }],
  chains: createChainRegistry(),
};

/** The value of every sample line of a metric in the exposition text, by its label set. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

const DASHBOARD_METRICS_ABSENT_UNTIL_FIRST_EVENT = [
  'stablebooks_balance_proof_drift',
  'stablebooks_chain_reorgs_total',
  'stablebooks_chain_reorg_depth_count',
  'stablebooks_chain_node_disagreements_total',
  'stablebooks_chain_transfers_recovered_total',
  'stablebooks_intent_polls_total',
  'stablebooks_metrics_scrape_errors_total',
];

describe('initialiseLabels', () => {
  it('behavior: a fresh registry exposes the seven dashboard metrics and the intake errors at 0', async () => {
    const metrics = createMetrics();
    initialiseLabels(metrics, config);
    const text = await metrics.registry.metrics();

    for (const name of DASHBOARD_METRICS_ABSENT_UNTIL_FIRST_EVENT) {
      const values = samples(text, name);
      expect(values.size, name).toBeGreaterThan(0);
      expect(
        [...values.values()].every((v) => v === 0),
        name,
      ).toBe(true);
    }
    expect(samples(text, 'stablebooks_chain_reorgs_total')).toEqual(
      new Map([
        ['{chain_id="8453"}', 0],
        ['{chain_id="1"}', 0],
      ]),
    );
    expect([...samples(text, 'stablebooks_balance_proof_drift').keys()].sort()).toEqual(
      [
        '{chain_id="8453",token="USDC",role="custody"}',
        '{chain_id="8453",token="USDC",role="merchant"}',
        '{chain_id="8453",token="USDT",role="custody"}',
        '{chain_id="8453",token="USDT",role="merchant"}',
      ].sort(),
    );
    expect(samples(text, 'stablebooks_intent_polls_total').size).toBe(4);
    expect(samples(text, 'stablebooks_metrics_scrape_errors_total')).toEqual(
      new Map([
        ['{source="database"}', 0],
        ['{source="queues"}', 0],
      ]),
    );

    const intakeErrors = samples(text, 'stablebooks_webhook_intake_errors_total');
    expect(intakeErrors.size).toBe(WEBHOOK_ENDPOINTS.length * INTAKE_ERROR_REASONS.length);
    expect(intakeErrors.get('{endpoint="checkout",reason="store_unavailable"}')).toBe(0);
    expect(intakeErrors.get('{endpoint="claim-links",reason="queue_full"}')).toBe(0);
    expect(intakeErrors.get('{endpoint="claim-links",reason="internal"}')).toBe(0);

    expect(
      samples(text, 'stablebooks_webhooks_received_total').get('{endpoint="checkout",outcome="stored"}'),
    ).toBe(0);
    expect(samples(text, 'stablebooks_webhooks_rejected_total').size).toBe(
      WEBHOOK_ENDPOINTS.length * WEBHOOK_REJECT_REASONS.length,
    );
    expect(samples(text, 'stablebooks_jobs_processed_total').get('{queue="recon",outcome="failed"}')).toBe(0);
    expect(
      samples(text, 'stablebooks_alert_notifications_total').get('{notifier="slack",outcome="failed"}'),
    ).toBe(0);
    expect(samples(text, 'stablebooks_events_delivered_total')).toEqual(
      new Map(EVENT_DELIVERY_OUTCOMES.map((o) => [`{outcome="${o}"}`, 0])),
    );
  });

  it('behavior: without a configuration the chain series are left out, the others are there', async () => {
    const metrics = createMetrics();
    initialiseLabels(metrics);
    const text = await metrics.registry.metrics();
    expect(samples(text, 'stablebooks_chain_reorgs_total').size).toBe(0);
    expect(samples(text, 'stablebooks_balance_proof_drift').size).toBe(0);
    expect(samples(text, 'stablebooks_intent_polls_total').size).toBe(4);
  });

  it('behavior: gauges that measure something are not set: 0 would be a value (and fire alerts)', async () => {
    const metrics = createMetrics();
    initialiseLabels(metrics, config);
    const text = await metrics.registry.metrics();
    for (const name of [
      'stablebooks_balance_proof_ok',
      'stablebooks_chain_last_pass_timestamp_seconds',
      'stablebooks_chain_head_block',
      'stablebooks_recon_last_success_timestamp_seconds',
      'stablebooks_recon_last_passed',
    ])
      expect(samples(text, name).size, name).toBe(0);
  });

  it('behavior: counts made before it stay (counters add 0)', async () => {
    const metrics = createMetrics();
    metrics.polls.inc({ outcome: 'changed' }, 3);
    initialiseLabels(metrics, config);
    const text = await metrics.registry.metrics();
    expect(samples(text, 'stablebooks_intent_polls_total').get('{outcome="changed"}')).toBe(3);
  });

  it("invariant: the known values are the code's own: notifiers, queues, intake endpoints", () => {
    expect([...ALERT_NOTIFIERS].sort()).toEqual([...NOTIFIER_NAMES].sort());
    const queues = Object.values(QUEUE).map((q) => (typeof q === 'function' ? 'polls' : q));
    expect([...JOB_QUEUES].sort()).toEqual(queues.sort());
    const paths: string[] = [];
    const app = { post: (path: string) => paths.push(path) };
    registerIntakeRoutes(app as unknown as Parameters<typeof registerIntakeRoutes>[0], {} as IntakeDeps);
    expect(paths.map((p) => p.replace('/webhooks/', '')).sort()).toEqual([...WEBHOOK_ENDPOINTS].sort());
  });

  it('invariant: the reasons the intake rejects webhooks with are known values', async () => {
    const metrics = createMetrics();
    const store = { storeId: 'st_a', apiKey: 'pk_a', apiSecret: 'secret' } as StoreConfig;
    const deps: IntakeDeps = {
      clock: systemClock,
      storesByKey: new Map([[store.apiKey, store]]),
      inbox: { store: async () => 'stored', waiting: () => 0 },
      queueLimit: 10,
      metrics,
    };
    const now = String(Math.floor(Date.now() / 1000));
    const signed = ['X-Webhook-Id', 'X-Webhook-Timestamp', 'X-Webhook-Nonce', 'X-Webhook-Signature'];
    const values: Record<string, string> = {
      'X-API-Key': 'pk_a',
      'X-Webhook-Id': 'wh_1',
      'X-Webhook-Timestamp': now,
      'X-Webhook-Nonce': 'n_1',
      'X-Webhook-Signature': 'v1=00',
    };
    const attempts: Array<Record<string, string>> = [
      {},
      { 'X-API-Key': 'pk_unknown' },
      // Each signed header missing in turn, then a stale timestamp and a wrong signature.
      ...signed.map((missing) => Object.fromEntries(Object.entries(values).filter(([h]) => h !== missing))),
      { ...values, 'X-Webhook-Timestamp': '0' },
      values,
    ];
    for (const headers of attempts)
      await receiveWebhook(deps, {
        endpoint: 'checkout',
        method: 'POST',
        path: '/webhooks/checkout',
        query: '',
        headers,
        rawBody: Buffer.from('{}'),
      });
    const reasons = [
      ...samples(await metrics.registry.metrics(), 'stablebooks_webhooks_rejected_total').keys(),
    ].map((labels) => /reason="([^"]*)"/.exec(labels)?.[1]);
    expect(reasons.length).toBe(attempts.length);
    expect(reasons.filter((r) => !(WEBHOOK_REJECT_REASONS as readonly string[]).includes(r ?? ''))).toEqual(
      [],
    );
  });
});
