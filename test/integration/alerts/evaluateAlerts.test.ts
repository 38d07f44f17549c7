import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type AlertDeps, evaluateAlerts } from '../../../src/alerts/evaluateAlerts.ts';
import { createSlackNotifier, createWebhookNotifier } from '../../../src/alerts/notifiers.ts';
import { createManualClock } from '../../../src/clock.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { createLogger } from '../../../src/logging/logger.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { proveBalances } from '../../../src/recon/balanceProofs.ts';
import { proofRefId } from '../../../src/recon/checks/assertions.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Alert runs against local receivers (the outside world): edge-triggered firing, reminder and
 * resolved messages, exactly once across concurrent runs, retries and the metric of a receiver
 * that is down, the signature, the Slack format, and no secret in any message.
 */
const ALERT_SECRET = 'alert-secret-0123456789abcdef';
const API_SECRET = 'svc-api-secret-zyxwvutsrqponm';
const MINUTE = 60_000;

interface Captured {
  headers: IncomingHttpHeaders;
  body: string;
}

async function startReceiver() {
  const received: Captured[] = [];
  const state = { status: 200, attempts: 0 };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      state.attempts++;
      if (state.status === 200) received.push({ headers: req.headers, body });
      res.statusCode = state.status;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  return { url, received, state };
}

const database = await createMigratedDatabase('alerts');
const { db } = database;
const webhook = await startReceiver();
const slack = await startReceiver();
const clock = createManualClock(new Date('2026-03-01T10:00:00Z'));
const logs: string[] = [];
const logger = createLogger({
  level: 'debug',
  destination: { write: (line: string) => logs.push(line) },
});
let metrics = createMetrics();

function deps(over: Partial<AlertDeps> = {}): AlertDeps {
  return {
    db,
    clock,
    logger,
    metrics,
    notifiers: [createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock })],
    routes: undefined,
    remindMs: 60 * MINUTE,
    chainLagBlocks: 50,
    secrets: [API_SECRET, ALERT_SECRET],
    retry: { attempts: 3, baseDelayMs: 1 },
    ...over,
  };
}

async function seedFinding(refId: string, details: Record<string, unknown> = { expected: '10.00' }) {
  await db.execute(sql`
    insert into findings (kind, severity, store_id, ref_type, ref_id, details)
    values ('amount_mismatch', 'critical', 'st_a', 'intent', ${refId}, ${JSON.stringify(details)}::jsonb)`);
}

async function resolveFinding(refId: string) {
  await db.execute(
    sql`update findings set resolved_at = now() where ref_id = ${refId} and resolved_at is null`,
  );
}

function events(receiver = webhook) {
  return receiver.received.map((r) => {
    const m = JSON.parse(r.body) as { event: string; key: string };
    return `${m.event} ${m.key}`;
  });
}

async function counter(notifier: string, outcome: string): Promise<number> {
  const { values } = await metrics.alertNotifications.get();
  return values.find((v) => v.labels.notifier === notifier && v.labels.outcome === outcome)?.value ?? 0;
}

beforeEach(async () => {
  // The owner's: the daemon's role may not truncate (corrections name findings).
  await database.ownerDb.execute(
    sql`truncate findings, corrections, alert_states, balance_proofs, chain_cursors`,
  );
  for (const r of [webhook, slack]) {
    r.received.length = 0;
    r.state.status = 200;
    r.state.attempts = 0;
  }
  metrics = createMetrics();
  logs.length = 0;
});

describe('evaluateAlerts', () => {
  it('behavior: fires once over two runs, reminds after the interval, resolves once', async () => {
    await seedFinding('pi_fire');
    await evaluateAlerts(deps());
    await evaluateAlerts(deps());
    expect(events()).toEqual(['firing finding:amount_mismatch:intent:pi_fire']);

    clock.advance(59 * MINUTE);
    await evaluateAlerts(deps());
    expect(events()).toHaveLength(1);
    clock.advance(2 * MINUTE);
    await evaluateAlerts(deps());
    await evaluateAlerts(deps());
    expect(events()).toEqual([
      'firing finding:amount_mismatch:intent:pi_fire',
      'reminder finding:amount_mismatch:intent:pi_fire',
    ]);

    await resolveFinding('pi_fire');
    await evaluateAlerts(deps());
    await evaluateAlerts(deps());
    expect(events().slice(2)).toEqual(['resolved finding:amount_mismatch:intent:pi_fire']);
    const ids = webhook.received.map((r) => (JSON.parse(r.body) as { id: string }).id);
    expect(new Set(ids).size).toBe(3);
    const { rows } = await db.execute<{ status: string; pending: string | null; notify_count: number }>(
      sql`select status, pending, notify_count from alert_states`,
    );
    expect(rows).toEqual([{ status: 'resolved', pending: null, notify_count: 3 }]);
  });

  it('behavior: concurrent runs send one message per event', async () => {
    await seedFinding('pi_concurrent_1');
    await seedFinding('pi_concurrent_2');
    await Promise.all([1, 2, 3, 4].map(() => evaluateAlerts(deps())));
    expect(events().sort()).toEqual([
      'firing finding:amount_mismatch:intent:pi_concurrent_1',
      'firing finding:amount_mismatch:intent:pi_concurrent_2',
    ]);
  });

  it('behavior: a condition that clears before its firing went out sends nothing', async () => {
    webhook.state.status = 503;
    await seedFinding('pi_flap');
    await evaluateAlerts(deps());
    await resolveFinding('pi_flap');
    webhook.state.status = 200;
    await evaluateAlerts(deps());
    expect(events()).toEqual([]);
  });

  it('error: a receiver answering 500 is retried and counted; the message goes out on a later run', async () => {
    webhook.state.status = 500;
    await seedFinding('pi_down');
    const first = await evaluateAlerts(deps());
    expect(first).toMatchObject({ delivered: 0, failed: 1 });
    expect(webhook.state.attempts).toBe(3);
    expect(await counter('webhook', 'retried')).toBe(2);
    expect(await counter('webhook', 'failed')).toBe(1);
    expect(logs.some((l) => l.includes('"level":40') && l.includes('alert notifier is down'))).toBe(true);
    const { rows } = await db.execute<{ pending: string; last_error: string }>(
      sql`select pending, last_error from alert_states`,
    );
    expect(rows[0]).toMatchObject({ pending: 'firing', last_error: expect.stringContaining('answered 500') });

    webhook.state.status = 200;
    const second = await evaluateAlerts(deps());
    expect(second).toMatchObject({ delivered: 1, failed: 0 });
    await evaluateAlerts(deps());
    expect(events()).toEqual(['firing finding:amount_mismatch:intent:pi_down']);
    expect(await counter('webhook', 'sent')).toBe(1);
    const after = await db.execute<{ pending: string | null; last_error: string | null }>(
      sql`select pending, last_error from alert_states`,
    );
    expect(after.rows[0]).toEqual({ pending: null, last_error: null });
  });

  it('behavior: the signature verifies with an independent HMAC over "<timestamp>.<body>"', async () => {
    await seedFinding('pi_signed');
    await evaluateAlerts(deps());
    const [msg] = webhook.received;
    if (!msg) throw new Error('no message received');
    const ts = String(msg.headers['x-stablebooks-timestamp']);
    expect(Number(ts)).toBe(Math.floor(clock.now().getTime() / 1000));
    const expected = createHmac('sha256', ALERT_SECRET).update(`${ts}.${msg.body}`).digest('hex');
    expect(msg.headers['x-stablebooks-signature']).toBe(`sha256=${expected}`);
    const wrong = createHmac('sha256', 'another-secret-0123456789').update(`${ts}.${msg.body}`).digest('hex');
    expect(msg.headers['x-stablebooks-signature']).not.toBe(`sha256=${wrong}`);
  });

  it('behavior: Slack gets {"text"}; routes send warnings to the webhook only', async () => {
    await db.execute(sql`
      insert into chain_cursors (chain_id, block_number, block_hash, head_block) values (11155111, 100, '0xh', 500)`);
    await db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, ledger_balance, chain_balance, ok)
      values (11155111, '0xToken', 'USDC', '0xWallet', 'merchant', 1000, 900, true),
             (11155111, '0xToken', 'USDC', '0xWallet', 'merchant', 1000, 900, false)`);
    const routed = deps({
      notifiers: [
        createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock }),
        createSlackNotifier({ url: slack.url }),
      ],
      routes: { critical: ['webhook', 'slack'], warning: ['webhook'] },
    });
    await evaluateAlerts(routed);
    expect(events().sort()).toEqual([
      'firing balance_proof:11155111:0xtoken:0xwallet',
      'firing chain_lag:11155111',
    ]);
    expect(slack.received).toHaveLength(1);
    const body = JSON.parse(slack.received[0]?.body ?? '{}') as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['text']);
    expect(body.text).toMatch(/^\*FIRING \[critical\]\* Balance proof failed: USDC merchant wallet 0xWallet/);
    expect(body.text).toContain('ledger 1000, balanceOf 900');
  });

  it('behavior: a notifier down does not resend to the one that took the message', async () => {
    slack.state.status = 500;
    await seedFinding('pi_partial');
    const both = deps({
      notifiers: [
        createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock }),
        createSlackNotifier({ url: slack.url }),
      ],
    });
    await evaluateAlerts(both);
    slack.state.status = 200;
    await evaluateAlerts(both);
    await evaluateAlerts(both);
    expect(events()).toHaveLength(1);
    expect(slack.received).toHaveLength(1);
    expect(await counter('slack', 'failed')).toBe(1);
    expect(await counter('slack', 'sent')).toBe(1);
  });

  it('behavior: each role of a shared address is followed, and a wallet that left the configuration stops alerting', async () => {
    await db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, ledger_balance, chain_balance, ok, error, proved_at)
      values (1, '0xtoken', 'USDT', '0xshared', 'merchant', 1000, 900, false, null, '2026-03-01T09:00:00Z'),
             (1, '0xtoken', 'USDT', '0xshared', 'custody', 500, 500, true, null, '2026-03-01T09:01:00Z'),
             (1, '0xtoken', 'USDT', '0xgone', 'merchant', 10, 9, false, null, '2026-03-01T09:00:00Z')`);
    await evaluateAlerts(deps());
    // The custody proof, newer and fine, does not hide the merchant one of the same address.
    expect(events().sort()).toEqual([
      'firing balance_proof:1:0xtoken:0xgone',
      'firing balance_proof:1:0xtoken:0xshared',
    ]);

    // Both roles of the address not proven: still one alert, the worse first, both roles named.
    await db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, ledger_balance, chain_balance, ok, error, proved_at)
      values (1, '0xtoken', 'USDT', '0xshared', 'custody', 500, null, null, 'rpc down', '2026-03-01T09:02:00Z')`);
    await evaluateAlerts(deps());
    expect(events()).toHaveLength(2);
    const shared = await db.execute<{ severity: string; labels: Record<string, string>; text: string }>(sql`
      select severity, labels, text from alert_states where key = 'balance_proof:1:0xtoken:0xshared'`);
    expect(shared.rows[0]).toMatchObject({ severity: 'critical', labels: { role: 'merchant+custody' } });
    expect(shared.rows[0]?.text).toMatch(
      /\(merchant\): ledger 1000, balanceOf 900.*\(custody\) at .*rpc down/,
    );

    // The next proof pass runs with neither wallet in the configuration: both alerts resolve.
    await proveBalances({ db, config: { stores: [], chains: createChainRegistry() }, rpcs: new Map() });
    await evaluateAlerts(deps());
    expect(events().slice(2).sort()).toEqual([
      'resolved balance_proof:1:0xtoken:0xgone',
      'resolved balance_proof:1:0xtoken:0xshared',
    ]);
    // And they stay resolved on the next passes and runs.
    await proveBalances({ db, config: { stores: [], chains: createChainRegistry() }, rpcs: new Map() });
    await evaluateAlerts(deps());
    expect(events()).toHaveLength(4);
    const rows = await db.execute<{ n: string }>(sql`
      select count(*)::text as n from balance_proofs where details->>'retired' = 'true'`);
    expect(rows.rows[0]?.n).toBe('3');
  });

  it('behavior: a rise in severity sends a new firing at once, to the routes of the new severity; a fall sends nothing', async () => {
    await db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      values ('stuck_intent', 'warning', 'st_a', 'intent', 'pi_rise', '{}'::jsonb)`);
    const routed = deps({
      notifiers: [
        createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock }),
        createSlackNotifier({ url: slack.url }),
      ],
      routes: { critical: ['webhook', 'slack'], warning: ['webhook'] },
    });
    await evaluateAlerts(routed);
    expect(events()).toEqual(['firing finding:stuck_intent:intent:pi_rise']);
    expect(slack.received).toHaveLength(0);

    // A minute later, well inside the reminder interval, the same finding becomes critical.
    clock.advance(MINUTE);
    await db.execute(sql`update findings set severity = 'critical' where ref_id = 'pi_rise'`);
    await evaluateAlerts(routed);
    expect(slack.received).toHaveLength(1);
    expect(JSON.parse(slack.received[0]?.body ?? '{}').text).toMatch(
      /^\*FIRING \[critical\]\* Finding stuck_intent/,
    );
    const sent = webhook.received.map(
      (r) => JSON.parse(r.body) as { event: string; severity: string; id: string },
    );
    expect(sent.map((m) => `${m.event} ${m.severity}`)).toEqual(['firing warning', 'firing critical']);
    expect(new Set(sent.map((m) => m.id)).size).toBe(2);

    // Back down to warning, then a new text alone: nothing until the reminder.
    clock.advance(MINUTE);
    await db.execute(sql`update findings set severity = 'warning' where ref_id = 'pi_rise'`);
    await evaluateAlerts(routed);
    await db.execute(sql`update findings set details = '{"age_days": 3}'::jsonb where ref_id = 'pi_rise'`);
    await evaluateAlerts(routed);
    expect(webhook.received).toHaveLength(2);
    expect(slack.received).toHaveLength(1);
    const { rows } = await db.execute<{ severity: string; pending: string | null; text: string }>(
      sql`select severity, pending, text from alert_states`,
    );
    expect(rows).toEqual([
      { severity: 'warning', pending: null, text: expect.stringContaining('age_days=3') },
    ]);
  });

  it('behavior: a rise before the firing reached every notifier goes to each under a new message id', async () => {
    slack.state.status = 500;
    await db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      values ('stuck_intent', 'warning', 'st_a', 'intent', 'pi_rise_partial', '{}'::jsonb)`);
    const both = deps({
      notifiers: [
        createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock }),
        createSlackNotifier({ url: slack.url }),
      ],
    });
    await evaluateAlerts(both);
    await db.execute(sql`update findings set severity = 'critical' where ref_id = 'pi_rise_partial'`);
    slack.state.status = 200;
    await evaluateAlerts(both);
    const sent = webhook.received.map((r) => JSON.parse(r.body) as { severity: string; id: string });
    expect(sent.map((m) => m.severity)).toEqual(['warning', 'critical']);
    // A receiver that drops repeats by id must not drop the critical one.
    expect(sent[1]?.id).not.toBe(sent[0]?.id);
    expect(slack.received).toHaveLength(1);
    expect(JSON.parse(slack.received[0]?.body ?? '{}').text).toMatch(/^\*FIRING \[critical\]\*/);
  });

  it('behavior: a chain whose indexer recorded no pass for over 10 minutes is stalled; a quiet chain is not', async () => {
    // 1: stuck (its last pass 11 minutes ago, its head as then seen equal to its cursor, so no lag);
    // 2: quiet (no new block, but passes keep recording it); 3: stuck, but no longer configured.
    await db.execute(sql`
      insert into chain_cursors (chain_id, block_number, block_hash, head_block, updated_at)
      values (1, 100, '0xh1', 100, now() - interval '11 minutes'),
             (2, 200, '0xh2', 200, now() - interval '5 seconds'),
             (3, 300, '0xh3', 300, now() - interval '3 days')`);
    await db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, ledger_balance, chain_balance, ok, details)
      values (1, '0xtoken', 'USDT', '0xa', 'merchant', 5, 5, true, '{}'::jsonb),
             (2, '0xtoken', 'USDT', '0xb', 'merchant', 5, 5, true, '{}'::jsonb),
             (3, '0xtoken', 'USDT', '0xc', 'merchant', 5, 5, null, '{"retired": true}'::jsonb)`);
    // The daemon's clock may follow the sandbox's, days ahead: the age is measured in database time.
    clock.advance(14 * 24 * 60 * MINUTE);
    await evaluateAlerts(deps());
    expect(events()).toEqual(['firing chain_stalled:1']);
    const { rows } = await db.execute<{ severity: string; text: string; labels: Record<string, string> }>(
      sql`select severity, text, labels from alert_states where key = 'chain_stalled:1'`,
    );
    expect(rows[0]).toMatchObject({
      severity: 'critical',
      labels: { source: 'chain_stalled', chain_id: '1' },
    });
    expect(rows[0]?.text).toMatch(/11 minutes ago \(threshold 10\), at block 100/);

    // A pass completes (the head read, nothing new): the stall resolves.
    await db.execute(sql`update chain_cursors set updated_at = now() where chain_id = 1`);
    await evaluateAlerts(deps());
    expect(events()).toEqual(['firing chain_stalled:1', 'resolved chain_stalled:1']);
  });

  it('behavior: one drifting wallet is one alert, though the reconciliation run also found it', async () => {
    // The proof pass found merchant and custody of one address off; the run recorded the finding
    // (recon/checks/assertions.ts) with the same figures.
    await db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, ledger_balance, chain_balance, ok, proved_at)
      values (1, '0xtoken', 'USDT', '0xdrift', 'merchant', 1000, 900, false, '2026-03-01T09:00:00Z'),
             (1, '0xtoken', 'USDT', '0xdrift', 'custody', 1000, 900, false, '2026-03-01T09:00:00Z')`);
    await db.execute(sql`
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      values ('balance_proof_failed', 'critical', null, 'wallet',
        ${proofRefId({ chainId: 1, token: '0xtoken', wallet: '0xdrift' })},
        ${JSON.stringify({ chain_id: 1, token: 'USDT', wallet: '0xdrift', role: 'merchant,custody', ledger_balance: '1000', chain_balance: '900' })}::jsonb)`);
    await evaluateAlerts(deps());
    await evaluateAlerts(deps());
    expect(events()).toEqual(['firing balance_proof:1:0xtoken:0xdrift']);
    const { rows } = await db.execute<{ key: string }>(
      sql`select key from alert_states where status = 'firing'`,
    );
    expect(rows.map((r) => r.key)).toEqual(['balance_proof:1:0xtoken:0xdrift']);

    // The wallet leaves the configuration: its alert resolves, and the finding, still open until
    // the next run, does not take over.
    await proveBalances({ db, config: { stores: [], chains: createChainRegistry() }, rpcs: new Map() });
    await evaluateAlerts(deps());
    expect(events()).toEqual([
      'firing balance_proof:1:0xtoken:0xdrift',
      'resolved balance_proof:1:0xtoken:0xdrift',
    ]);
  });

  it('behavior: no secret in any message', async () => {
    await seedFinding('pi_secret', {
      api_secret: API_SECRET,
      note: `copied ${API_SECRET} and ${ALERT_SECRET}`,
      claim_url: 'https://pay.example/claim/abcdefghijklmnopqrstuvwxyz012345',
      hint: 'see /claim/abcdefghijklmnopqrstuvwxyz012345',
      amount: '12.34',
    });
    const both = deps({
      notifiers: [
        createWebhookNotifier({ url: webhook.url, secret: ALERT_SECRET, clock }),
        createSlackNotifier({ url: slack.url }),
      ],
    });
    await evaluateAlerts(both);
    await resolveFinding('pi_secret');
    await evaluateAlerts(both);
    const captured = [...webhook.received, ...slack.received];
    expect(captured).toHaveLength(4);
    for (const c of captured) {
      const all = c.body + JSON.stringify(c.headers);
      expect(all).not.toContain(API_SECRET);
      expect(all).not.toContain(ALERT_SECRET);
      expect(all).not.toContain('abcdefghijklmnopqrstuvwxyz012345');
    }
    expect(webhook.received[0]?.body).toContain('amount=12.34');
  });
});
