import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRpcs } from '../../src/chain/rpcClients.ts';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { trialBalance } from '../../src/ledger/balances.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { cancelPayout } from '../../src/payouts/cancelPayout.ts';
import { type CreatePayoutTuning, createPayout } from '../../src/payouts/createPayout.ts';
import { runReconciliation } from '../../src/recon/runReconciliation.ts';
import { signWebhook } from '../../src/svc/signing/webhookSignature.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The claim-link cancelled webhook as the spec promises it (refund_tx_hash, nothing else shown),
 * end to end: the sandbox's own webhook, which names the link, is dropped; a signed body carrying
 * only refund_tx_hash reaches the daemon's intake after the indexer has read the refund. The
 * daemon (every role, in process, on the sandbox's clock) applies it to the link the refund came
 * from, the books close and refund the link once, and a reconciliation run counts it as the
 * link's webhook. Finality is 2 blocks deep; the test mines blocks.
 */
const pipeline = await startPipeline({ finalityDepth: 2 });
await pipeline.startDaemon();
const clock = pipeline.sandbox.world.clock;
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const store = pipeline.config.stores[0]!;
const deps: DomainContext & CreatePayoutTuning = {
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

/** Waits, mining a block per look so finality moves. */
function waitMining<T>(check: () => Promise<T | undefined | null | false>): Promise<T> {
  return pipeline.waitFor(async () => {
    await mine(1);
    return check();
  }, 40_000);
}

async function payoutRow(linkId: string) {
  const { rows } = await pipeline.db.execute<{
    pool_address: string | null;
    link_status: string | null;
    refund_tx_hash: string | null;
    refunded_at: Date | null;
  }>(
    sql`select pool_address, link_status, refund_tx_hash, refunded_at from payouts where claim_link_id = ${linkId}`,
  );
  return rows[0];
}

describe('claim-link cancelled webhook with refund_tx_hash only', () => {
  it('behavior: applied to the link whose refund it names; closed and refunded once; no missing_webhook', async () => {
    const { payout } = await createPayout(deps, {
      storeId: 'st_a',
      amount: '3',
      coin: 'USDT',
      chain: chain.chainId,
      referenceId: `refund-only-${Date.now().toString(36)}`,
    });
    const linkId = payout.claimLinkId!;
    // The daemon learns the pool from the final funding transfer; the scanner sends the link.
    await waitMining(async () => (await payoutRow(linkId))?.pool_address);
    await pipeline.waitFor(async () => {
      const link = await pipeline.sandbox.control<{ status: string }>(`/_sandbox/claim_links/${linkId}`);
      return link.body.status === 'link_sent';
    });

    // The service's own webhook (with claim_link_id and an event name) never arrives.
    await control('/_sandbox/faults', { webhooks: { drop_next: 1 } });
    await cancelPayout(deps, linkId);
    const refundTxHash = await pipeline.waitFor(async () => {
      const link = await control<{ refund_tx_hash: string | null }>(`/_sandbox/claim_links/${linkId}`);
      return link.refund_tx_hash;
    });
    const dropped = await pipeline.waitFor(async () => {
      const all =
        await control<Array<{ state: string; body: Record<string, unknown> }>>('/_sandbox/webhooks');
      return all.find((d) => d.body.claim_link_id === linkId);
    });
    expect(dropped.state).toBe('dropped');
    // The indexer has read the refund transfer (final or not).
    await waitMining(async () => {
      const { rows } = await pipeline.db.execute(
        sql`select 1 from chain_transfers where tx_hash = ${refundTxHash.toLowerCase()}`,
      );
      return rows.length > 0;
    });

    // What the spec promises, signed with the store's secret as the service signs its webhooks.
    const webhookId = randomUUID();
    const body = JSON.stringify({ refund_tx_hash: refundTxHash });
    const res = await fetch(`${pipeline.daemonUrl}/webhooks/claim-links`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-API-Key': store.apiKey,
        ...signWebhook({
          secret: store.apiSecret,
          method: 'POST',
          path: '/webhooks/claim-links',
          webhookId,
          body,
          clock,
        }),
      },
      body,
    });
    expect(res.status, await res.text()).toBe(200);
    // Before: no event name, so `unhandled_webhook_event`: processed with no link, never applied.
    await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute(sql`
        select 1 from webhook_inbox where webhook_id = ${webhookId} and status = 'processed' and ref_id = ${linkId}`);
      return rows.length > 0;
    });

    const refunded = await waitMining(async () => {
      const row = await payoutRow(linkId);
      return row?.refunded_at ? row : undefined;
    });
    expect(refunded).toMatchObject({ link_status: 'cancelled', refund_tx_hash: refundTxHash.toLowerCase() });
    const { rows: entries } = await pipeline.db.execute<{ kind: string }>(
      sql`select kind from ledger_entries where ref_id = ${linkId} order by id`,
    );
    expect(entries.map((e) => e.kind).filter((k) => k !== 'claim_link.funding_fee')).toEqual([
      'claim_link.funded',
      'claim_link.cancelled',
      'claim_link.refunded',
    ]);
    const { rows: unhandled } = await pipeline.db.execute(sql`
      select 1 from findings where kind in ('unhandled_webhook_event', 'webhook_for_unknown_claim_link')
        and ref_id in (${webhookId}, ${linkId})`);
    expect(unhandled).toEqual([]);

    // Past RECON_WEBHOOK_MINUTES after the refund: the link's webhook is not missing.
    await clock.advance(pipeline.config.recon.webhookWindowMs / 1000 + 60);
    const now = clock.now().getTime();
    const run = await runReconciliation(
      {
        db: pipeline.db,
        config: pipeline.config,
        rpcs: createChainRpcs(pipeline.config, createMetrics()),
        logger: pipeline.payments.logger,
        clock,
      },
      {
        period: { from: new Date(now - 2 * DAY_MS), to: new Date(now + 2 * DAY_MS) },
        storeId: 'st_a',
        formats: ['json'],
      },
    );
    expect(run.status).toBe('completed');
    expect(run.report.checks.find((c) => c.name === 'matching.claim_links')?.status).toBe('pass');
    const { rows: missing } = await pipeline.db.execute(sql`
      select 1 from findings where kind = 'missing_webhook' and ref_type = 'claim_link' and ref_id = ${linkId}`);
    expect(missing).toEqual([]);
    for (const line of await trialBalance(pipeline.db)) expect(line.net, line.asset).toBe(0n);
  }, 90_000);
});
