import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRpcs } from '../../src/chain/rpcClients.ts';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { cancelPayout } from '../../src/payouts/cancelPayout.ts';
import { type CreatePayoutTuning, createPayout } from '../../src/payouts/createPayout.ts';
import { type ReconDeps, type ReconResult, runReconciliation } from '../../src/recon/runReconciliation.ts';
import { CheckoutStatus } from '../../src/svc/models/checkoutStatus.ts';
import { signWebhook } from '../../src/svc/signing/webhookSignature.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * A reconciliation run finds what goes wrong end to end (docs/accounting.md, "Findings"): the sandbox on
 * anvil misbehaves (a dropped webhook, a service reporting the wrong net, a late refund, a
 * stranger's transfer), the daemon (every role, in process, on the sandbox's clock) books what it
 * sees, and `runReconciliation` reports each cause as a finding, and resolves it once the cause
 * has cleared. The books stay balanced throughout. Finality is 2 blocks deep; tests mine blocks.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
await pipeline.startDaemon();
const clock = pipeline.sandbox.world.clock;
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const merchant = await chain.wallet('merchant:st_a');
const deps: ReconDeps = {
  db: pipeline.db,
  config: pipeline.config,
  rpcs: createChainRpcs(pipeline.config, createMetrics()),
  logger: pipeline.payments.logger,
  clock,
};
const payoutDeps: DomainContext & CreatePayoutTuning = {
  ...pipeline.payments,
  client: () => pipeline.sandbox.client('st_a', { retry: { maxAttempts: 1 }, clock }),
  encryptionKey: pipeline.config.encryptionKey,
  sleep: async () => {},
};
const DAY_MS = 86_400_000;

const mine = (blocks: number) => rawRpc(chain.rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`]);

async function control<T = unknown>(path: string, body?: unknown): Promise<T> {
  const res = await pipeline.sandbox.control<T>(path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/**
 * One run over a period around the sandbox's now (days ahead of real time once the tests move
 * it): findings are stamped by the database, and the report places the period on that time line,
 * so the findings of this file are "new" in it.
 */
async function run(): Promise<ReconResult> {
  const now = clock.now().getTime();
  const result = await runReconciliation(deps, {
    period: { from: new Date(now - 2 * DAY_MS), to: new Date(now + 2 * DAY_MS) },
    storeId: 'st_a',
    formats: ['json'],
  });
  expect(result.status).toBe('completed');
  expect(result.report.trialBalance.length).toBeGreaterThan(0);
  for (const line of result.report.trialBalance) expect(line.net, `${line.symbol} net`).toBe('0');
  return result;
}

function check(result: ReconResult, name: string) {
  const found = result.report.checks.find((c) => c.name === name);
  expect(found, name).toBeDefined();
  return found!;
}

type FindingDbRow = {
  id: string;
  kind: string;
  severity: string;
  resolved_at: string | null;
  /** Microseconds since the epoch, as text (exact, unlike a parsed timestamp). */
  last_seen_us: string;
  details: Record<string, unknown>;
};

async function findingsOf(kind: string, refType: string, refId: string): Promise<FindingDbRow[]> {
  const { rows } = await pipeline.db.execute<FindingDbRow>(sql`
    select id::text, kind, severity, resolved_at::text, (extract(epoch from last_seen_at) * 1000000)::bigint::text as last_seen_us, details from findings
    where kind = ${kind} and ref_type = ${refType} and ref_id = ${refId} order by id`);
  return rows;
}

async function trackedIntent(): Promise<string> {
  const { created } = await createIntent(pipeline.payments, 'st_a', { stable_coin: 1, amount_cents: 2500n });
  return created.allsvc_checkout_intent_id;
}

async function waitForConfirmed(id: string): Promise<void> {
  await pipeline.waitFor(async () => {
    const { rows } = await pipeline.db.execute<{ status: number | null }>(
      sql`select status from checkout_intents where id = ${id}`,
    );
    return rows[0]?.status === CheckoutStatus.CONFIRMED;
  });
}

/** Waits (mining a block per look, so finality moves) until the intent's payment is proven on chain. */
async function waitForChainProof(id: string): Promise<void> {
  await pipeline.waitFor(async () => {
    await mine(1);
    const { rows } = await pipeline.db.execute(
      sql`select 1 from ledger_entries where ref_id = ${id} and kind = 'chain.payment_proven'`,
    );
    return rows.length > 0;
  }, 30_000);
}

describe('reconciliation finds what went wrong end to end, and resolves it when the cause clears', () => {
  it('behavior: a stranger paying the merchant wallet is booked to suspense and fails clearing.suspense', async () => {
    await chain.mint('USDC', await chain.wallet('stranger'), 3_000_000n);
    const sent = await chain.transfer('USDC', 'stranger', merchant, 3_000_000n);
    await mine(3);
    // The matcher waits its grace (the webhook or poll may still be on the way): move past it.
    await clock.advance(120);
    const finding = await pipeline.waitFor(async () => {
      await mine(1);
      const { rows } = await pipeline.db.execute<{ id: string; ref_id: string }>(sql`
        select id::text, ref_id from findings where kind = 'unmatched_transfer_in' and resolved_at is null
          and details->>'tx_hash' = ${sent.txHash.toLowerCase()}`);
      return rows[0];
    }, 40_000);

    const result = await run();
    const suspense = check(result, 'clearing.suspense');
    expect(suspense.status).toBe('fail');
    expect(suspense.count).toBeGreaterThanOrEqual(1);
    const listed = result.report.findings.new.filter((f) => f.id === finding.id);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      kind: 'unmatched_transfer_in',
      refType: 'chain_transfer',
      refId: finding.ref_id,
      storeId: 'st_a',
      resolvedAt: null,
    });
    expect(listed[0]!.details).toMatchObject({ tx_hash: sent.txHash.toLowerCase() });
  });

  it('behavior: a service reporting net_income_amount != P - F is a fee_arithmetic_mismatch the run reports', async () => {
    const id = await trackedIntent();
    await control(`/_sandbox/intents/${id}/pay`, { reported_net_income: '24.7' });
    await waitForConfirmed(id);
    await waitForChainProof(id);
    const before = await findingsOf('fee_arithmetic_mismatch', 'checkout_intent', id);

    const result = await run();
    const matching = check(result, 'matching.intents');
    expect(matching.status).toBe('fail');
    expect(matching.count).toBeGreaterThanOrEqual(1);
    const open = (await findingsOf('fee_arithmetic_mismatch', 'checkout_intent', id)).filter(
      (f) => f.resolved_at === null,
    );
    expect(open).toHaveLength(1);
    expect(open[0]!.details).toMatchObject({
      token: 'USDT',
      actual_paid_amount: '25',
      service_fee_amount: '0.25',
      net_income_amount: '24.7',
      expected_net_income_amount: '24.75',
    });
    // Still open (the run owns the kind, so a run that did not find it would resolve it), and refreshed.
    const earlier = before.find((f) => f.id === open[0]!.id);
    expect(earlier, 'rule 1 reported it when booking').toBeDefined();
    expect(BigInt(open[0]!.last_seen_us)).toBeGreaterThan(BigInt(earlier!.last_seen_us));
    expect(result.report.findings.new.map((f) => `${f.kind} ${f.refId}`)).toContain(
      `fee_arithmetic_mismatch ${id}`,
    );
    // The proven net settled the books; the chain agrees with P - F, so no amount_mismatch.
    expect(await findingsOf('amount_mismatch', 'checkout_intent', id)).toEqual([]);
  });

  it('behavior: a signed checkout webhook whose actual_paid_amount disagrees with the API is an amount_mismatch', async () => {
    const id = await trackedIntent();
    await control(`/_sandbox/intents/${id}/pay`, {});
    await waitForConfirmed(id);
    await waitForChainProof(id);
    const genuine = await pipeline.waitFor(async () => {
      const all =
        await control<Array<{ state: string; body: Record<string, unknown> }>>('/_sandbox/webhooks');
      return all.find((d) => d.body.all_svc_checkout_intent_id === id && d.state === 'delivered');
    });
    // Nothing disagrees yet: the genuine webhook says what the API says.
    const clean = await run();
    expect(clean.report.findings.new.some((f) => f.kind === 'amount_mismatch' && f.refId === id)).toBe(false);

    // A second delivery, signed with the store's secret as the service signs, claims 26 were paid.
    const webhookId = randomUUID();
    const body = JSON.stringify({ ...genuine.body, webhook_id: webhookId, actual_paid_amount: '26' });
    const store = pipeline.config.stores[0]!;
    const res = await fetch(`${pipeline.daemonUrl}/webhooks/checkout`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-API-Key': store.apiKey,
        ...signWebhook({
          secret: store.apiSecret,
          method: 'POST',
          path: '/webhooks/checkout',
          webhookId,
          body,
          clock,
        }),
      },
      body,
    });
    expect(res.status, await res.text()).toBe(200);
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute(sql`
        select 1 from webhook_inbox where webhook_id = ${webhookId} and status = 'processed' and ref_id = ${id}`);
      return rows.length > 0;
    });
    // Processing stored the amount the webhook sent, which matching reads instead of the body.
    const stored = await pipeline.db.execute<{ paid: string }>(sql`
      select actual_paid_amount::text as paid from webhook_inbox where webhook_id = ${webhookId}`);
    expect(stored.rows[0]?.paid).toBe(JSON.parse(body).actual_paid_amount);

    const result = await run();
    expect(check(result, 'matching.intents').status).toBe('fail');
    const open = await findingsOf('amount_mismatch', 'checkout_intent', id);
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ severity: 'warning', resolved_at: null });
    expect(open[0]!.details).toMatchObject({
      token: 'USDT',
      api_actual_paid_amount: '25',
      api_net_income_amount: '24.75',
      webhook_actual_paid_amount_min: '25',
      webhook_actual_paid_amount_max: '26',
      chain_amount: '24.75',
    });
    expect(result.report.findings.new.map((f) => `${f.kind} ${f.refId}`)).toContain(`amount_mismatch ${id}`);
  });

  it('behavior: a dropped checkout webhook is missing_webhook after the window, resolved once redelivered', async () => {
    const id = await trackedIntent();
    await control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    await control(`/_sandbox/intents/${id}/pay`, {});
    // Polling finds the payment; the chain proves it.
    await waitForConfirmed(id);
    await waitForChainProof(id);
    const delivery = await pipeline.waitFor(async () => {
      const all =
        await control<Array<{ webhook_id: string; state: string; body: Record<string, unknown> }>>(
          '/_sandbox/webhooks',
        );
      return all.find((d) => d.body.all_svc_checkout_intent_id === id);
    });
    expect(delivery.state).toBe('dropped');

    // Within the window nothing is missing yet.
    const early = await run();
    expect(early.report.findings.new.some((f) => f.kind === 'missing_webhook' && f.refId === id)).toBe(false);
    expect(await findingsOf('missing_webhook', 'checkout_intent', id)).toEqual([]);

    // RECON_WEBHOOK window (60 min) passes on the sandbox clock.
    await clock.advance(pipeline.config.recon.webhookWindowMs / 1000 + 60);
    const late = await run();
    expect(check(late, 'matching.intents').status).toBe('fail');
    const open = await findingsOf('missing_webhook', 'checkout_intent', id);
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ severity: 'warning', resolved_at: null });
    expect(open[0]!.details).toMatchObject({ token: 'USDT', actual_paid_amount: '25' });
    expect(late.report.findings.new.map((f) => `${f.kind} ${f.refId}`)).toContain(`missing_webhook ${id}`);

    // The webhook turns up (same body and webhook_id, freshly signed): the next run resolves it.
    await control(`/_sandbox/webhooks/${delivery.webhook_id}/redeliver`, {});
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute(sql`
        select 1 from webhook_inbox where endpoint = 'checkout' and status = 'processed' and ref_id = ${id}`);
      return rows.length > 0;
    });
    const rerun = await run();
    expect(rerun.findings.resolved).toBeGreaterThanOrEqual(1);
    const after = await findingsOf('missing_webhook', 'checkout_intent', id);
    expect(after).toHaveLength(1);
    expect(after[0]!.resolved_at).not.toBeNull();
    expect(rerun.report.findings.resolved.some((f) => f.kind === 'missing_webhook' && f.refId === id)).toBe(
      true,
    );
  });

  it('behavior: a run while a payout is funded but its funding is not final yet does not fail the custody proof', async () => {
    const { payout } = await createPayout(payoutDeps, {
      storeId: 'st_a',
      amount: '2',
      coin: 'USDT',
      chain: chain.chainId,
      referenceId: `inflight-${Date.now().toString(36)}`,
    });
    const linkId = payout.claimLinkId!;
    const during = await run();
    const custody = during.report.balanceProofs.filter((p) => p.role === 'custody');
    expect(custody.length).toBeGreaterThan(0);
    expect(
      custody.filter((p) => p.result === 'fail'),
      'the amount rule 5 booked is still in custody on chain at the proof block',
    ).toEqual([]);
    // Once the funding is final and booked, the proofs pass without it.
    await pipeline.waitFor(async () => {
      await mine(1);
      const { rows } = await pipeline.db.execute<{ pool_address: string | null }>(
        sql`select pool_address from payouts where claim_link_id = ${linkId}`,
      );
      return rows[0]?.pool_address;
    }, 30_000);
    const after = await run();
    expect(after.report.balanceProofs.filter((p) => p.role === 'custody').map((p) => p.result)).not.toContain(
      'fail',
    );
  });

  it('behavior: a cancelled claim link whose refund is later than the grace is refund_overdue, resolved once proven', async () => {
    const graceS = pipeline.config.refundGraceMs / 1000;
    const { payout } = await createPayout(payoutDeps, {
      storeId: 'st_a',
      amount: '3',
      coin: 'USDT',
      chain: chain.chainId,
      referenceId: `overdue-${Date.now().toString(36)}`,
    });
    const linkId = payout.claimLinkId!;
    // The daemon has learnt the pool wallet from the final funding transfer, and the link is sent.
    await pipeline.waitFor(async () => {
      await mine(1);
      const { rows } = await pipeline.db.execute<{ pool_address: string | null }>(
        sql`select pool_address from payouts where claim_link_id = ${linkId}`,
      );
      return rows[0]?.pool_address;
    }, 30_000);
    await pipeline.waitFor(async () => {
      const res = await pipeline.sandbox.control<{ status: string }>(`/_sandbox/claim_links/${linkId}`);
      return res.body.status === 'link_sent';
    });
    // The service takes twice the grace to refund this link (the delay is fixed at cancel).
    const defaults = await control<{ refund_delay_ms: number }>('/_sandbox/claim_links/config');
    await control('/_sandbox/claim_links/config', { refund_delay_ms: 2 * pipeline.config.refundGraceMs });
    try {
      await cancelPayout(payoutDeps, linkId);
    } finally {
      await control('/_sandbox/claim_links/config', { refund_delay_ms: defaults.refund_delay_ms });
    }

    const onTime = await run();
    expect(onTime.report.findings.new.some((f) => f.kind === 'refund_overdue' && f.refId === linkId)).toBe(
      false,
    );

    await clock.advance(graceS + 3600);
    const late = await run();
    const receivable = check(late, 'clearing.refund_receivable');
    expect(receivable.status).toBe('fail');
    expect(receivable.count).toBeGreaterThanOrEqual(1);
    const open = await findingsOf('refund_overdue', 'claim_link', linkId);
    expect(open).toHaveLength(1);
    expect(open[0]).toMatchObject({ severity: 'warning', resolved_at: null });
    expect(open[0]!.details).toMatchObject({ closed: 'cancelled', coin: 'USDT' });
    expect(late.report.findings.new.map((f) => `${f.kind} ${f.refId}`)).toContain(`refund_overdue ${linkId}`);
    const sandboxLink = await control<{ refund_status: string }>(`/_sandbox/claim_links/${linkId}`);
    expect(sandboxLink.refund_status).toBe('refund_pending');

    // The refund arrives; once final on chain the daemon proves it (refunded_at), and a rerun resolves.
    await clock.advance(graceS);
    await pipeline.waitFor(async () => {
      await mine(1);
      const { rows } = await pipeline.db.execute<{ refunded_at: Date | null }>(
        sql`select refunded_at from payouts where claim_link_id = ${linkId}`,
      );
      return rows[0]?.refunded_at;
    }, 40_000);
    const rerun = await run();
    const after = await findingsOf('refund_overdue', 'claim_link', linkId);
    expect(after).toHaveLength(1);
    expect(after[0]!.resolved_at).not.toBeNull();
    expect(check(rerun, 'clearing.refund_receivable').status).toBe('pass');
    expect(
      rerun.report.findings.resolved.some((f) => f.kind === 'refund_overdue' && f.refId === linkId),
    ).toBe(true);
  }, 60_000);
});
