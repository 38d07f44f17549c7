import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { processInboxWebhook } from '../../../src/inbox/processInboxWebhook.ts';
import { replayWebhooks } from '../../../src/intake/replayWebhooks.ts';
import { cancelPayout } from '../../../src/payouts/cancelPayout.ts';
import { createPayout } from '../../../src/payouts/createPayout.ts';
import { PayoutNotFoundError, PayoutStateError } from '../../../src/payouts/errors.ts';
import { findPayout } from '../../../src/payouts/payoutRecord.ts';
import { eventually } from '../sandbox/claimLinkTestKit.ts';
import { ref, startPayoutsWorld, untilLinkSent } from './payoutsKit.ts';

/**
 * cancelPayout and the cancelled webhook against the real sandbox and PostgreSQL: rule 7 once
 * whether the cancel is repeated, answered 50108 "cancelled" or learnt from the webhook; links
 * that cannot be cancelled say why and post nothing.
 */
const world = await startPayoutsWorld('payouts_cancel');
const { deps, db } = world;

async function createLink(amount = '3') {
  const created = await createPayout(deps, {
    storeId: 'st_a',
    amount,
    coin: 'USDT',
    chain: 11155111,
    referenceId: ref('cancel'),
  });
  const id = created.payout.claimLinkId ?? '';
  return { payoutId: created.payout.id, claimLinkId: id };
}

async function closeEntries(claimLinkId: string) {
  const { rows } = await db.execute<{ kind: string; occurred_at: string }>(
    sql`select kind, occurred_at from ledger_entries where idempotency_key = ${`claim_link:closed:${claimLinkId}`}`,
  );
  return rows.map((r) => ({ kind: r.kind, occurred_at: new Date(r.occurred_at) }));
}

/** Stores the sandbox's webhook for a link as intake would (verified, inbox row) and processes it. */
async function deliverWebhookOf(claimLinkId: string) {
  const hook = await eventually(async () =>
    world.webhooks.received.find(
      (h) => (JSON.parse(h.body) as { claim_link_id?: string }).claim_link_id === claimLinkId,
    ),
  );
  const webhookId = hook.headers['x-webhook-id'] ?? '';
  await db.execute(sql`
    insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
    values (${webhookId}, 'st_a', 'claim-links', 'received', '{}'::jsonb, ${Buffer.from(hook.body)})
    on conflict do nothing`);
  return {
    webhookId,
    body: JSON.parse(hook.body) as Record<string, unknown>,
    outcome: await processInboxWebhook(deps, webhookId),
  };
}

describe('cancelPayout', () => {
  it('behavior: cancel, then cancel again (50108 cancelled): one rule 7; the webhook records the refund hash', async () => {
    const link = await createLink('3');
    await untilLinkSent(world, link.claimLinkId);
    const first = await cancelPayout(deps, link.payoutId);
    expect(first).toMatchObject({
      alreadyCancelled: false,
      newlyCancelled: true,
      payout: { linkStatus: 'cancelled' },
    });
    const cancelledAt = first.payout.cancelledAt;
    expect(cancelledAt).not.toBeNull();

    const second = await cancelPayout(deps, link.claimLinkId);
    expect(second).toMatchObject({ alreadyCancelled: true, newlyCancelled: false });
    expect(second.payout.cancelledAt).toEqual(cancelledAt);
    expect(await closeEntries(link.claimLinkId)).toEqual([
      { kind: 'claim_link.cancelled', occurred_at: cancelledAt },
    ]);
    expect(await world.ledgerLines(link.claimLinkId)).toEqual([
      'claim_link.funded: assets:claim_pool 3000000',
      'claim_link.funded: assets:custody -3000000',
      'claim_link.cancelled: assets:claim_pool -3000000',
      'claim_link.cancelled: assets:refund_receivable 3000000',
    ]);

    // The refund settles 5 sandbox seconds later; its webhook names the refund transfer.
    await world.advance(6);
    const delivered = await deliverWebhookOf(link.claimLinkId);
    expect(delivered.outcome).toEqual({
      kind: 'claim_link_applied',
      claimLinkId: link.claimLinkId,
      storeId: 'st_a',
    });
    const row = await findPayout(db, { id: link.payoutId });
    expect(row?.refundTxHash).toBe(String(delivered.body.refund_tx_hash).toLowerCase());
    expect(row?.refundedAt).toBeNull(); // set when the chain proves the refund (rule 8)
    expect(await closeEntries(link.claimLinkId)).toHaveLength(1);
    // Processed once: a repeat finds the inbox row done.
    expect(await processInboxWebhook(deps, delivered.webhookId)).toEqual({ kind: 'already_done' });
  });

  it('behavior: a link cancelled elsewhere becomes cancelled in our books through its webhook, with rule 7 once', async () => {
    const link = await createLink('2');
    await untilLinkSent(world, link.claimLinkId);
    await world.plainClient().cancelClaimLinkAutoPayout(link.claimLinkId);
    await world.advance(6);
    const delivered = await deliverWebhookOf(link.claimLinkId);
    expect(delivered.outcome.kind).toBe('claim_link_applied');
    const row = await findPayout(db, { id: link.payoutId });
    expect(row).toMatchObject({ linkStatus: 'cancelled' });
    expect(row?.cancelledAt).not.toBeNull();
    expect(await closeEntries(link.claimLinkId)).toEqual([
      { kind: 'claim_link.cancelled', occurred_at: row?.cancelledAt },
    ]);
    const finding = await db.execute<{ kind: string; severity: string }>(sql`
      select kind, severity from findings where ref_id = ${link.claimLinkId}`);
    expect(finding.rows).toEqual([{ kind: 'cancelled_outside_stablebooks', severity: 'info' }]);
    // Our own cancel afterwards hears 50108 "cancelled" and posts nothing new.
    const again = await cancelPayout(deps, link.payoutId);
    expect(again).toMatchObject({ alreadyCancelled: true, newlyCancelled: false });
    expect(await closeEntries(link.claimLinkId)).toHaveLength(1);
  });

  it('error: a claimed link cannot be cancelled; the error names the status, link_status records it, nothing is posted', async () => {
    const link = await createLink('1');
    await untilLinkSent(world, link.claimLinkId);
    expect((await world.sb.control(`/_sandbox/claim_links/${link.claimLinkId}/claim`, {})).status).toBe(200);
    const asked = world.sb.world.clock.now();
    const err = await cancelPayout(deps, link.payoutId).catch((e: unknown) => e);
    const answered = world.sb.world.clock.now();
    expect(err).toBeInstanceOf(PayoutStateError);
    expect((err as Error).message).toBe(
      `claim link ${link.claimLinkId} (payout ${link.payoutId}) cannot be cancelled: the service says it is claimed; its recipient has claimed it`,
    );
    // What the service said is recorded (on the injected clock) apart from claimed_at, which only
    // the chain's claim sets.
    const payout = await findPayout(db, { id: link.payoutId });
    expect(payout).toMatchObject({ linkStatus: 'claimed', cancelledAt: null, claimedAt: null });
    const reportedAt = payout?.claimedReportedAt ?? null;
    expect(reportedAt?.getTime()).toBeGreaterThanOrEqual(asked.getTime());
    expect(reportedAt?.getTime()).toBeLessThanOrEqual(answered.getTime());
    expect(await closeEntries(link.claimLinkId)).toEqual([]);
    // Asked again later: the first report is kept.
    await world.advance(60);
    await expect(cancelPayout(deps, link.payoutId)).rejects.toBeInstanceOf(PayoutStateError);
    expect((await findPayout(db, { id: link.payoutId }))?.claimedReportedAt).toEqual(reportedAt);
  });

  it('error: a link not yet confirmed by the scanner, and an unknown id', async () => {
    const link = await createLink('1');
    await expect(cancelPayout(deps, link.payoutId)).rejects.toThrow(
      /it is pending_deposit; its funding is not confirmed yet/,
    );
    expect(await closeEntries(link.claimLinkId)).toEqual([]);
    await expect(cancelPayout(deps, 'po_nope')).rejects.toThrow(PayoutNotFoundError);
  });

  it('behavior: a webhook for a link we do not know is a finding; other event kinds stay unhandled findings', async () => {
    const store = async (webhookId: string, body: unknown) => {
      await db.execute(sql`
        insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body)
        values (${webhookId}, 'st_a', 'claim-links', 'received', '{}'::jsonb, ${Buffer.from(JSON.stringify(body))})`);
      return processInboxWebhook(deps, webhookId);
    };
    const unknown = await store('wh_unknown_link', {
      event: 'cancelled',
      claim_link_id: 'cl_000000000000000000000000',
      refund_tx_hash: `0x${'ab'.repeat(32)}`,
    });
    expect(unknown).toMatchObject({
      kind: 'unusable',
      reason: expect.stringMatching(/no payout of store st_a/),
    });
    const other = await store('wh_other_kind', {
      event: 'claimed',
      claim_link_id: 'cl_000000000000000000000001',
    });
    expect(other).toMatchObject({ kind: 'unusable', reason: 'unhandled claim-links event claimed' });
    const malformed = await store('wh_malformed', { event: 'cancelled', claim_link_id: 'cl_x' });
    expect(malformed.kind).toBe('unusable');
    const { rows } = await db.execute<{ kind: string; ref_id: string }>(sql`
      select kind, ref_id from findings where kind in ('webhook_for_unknown_claim_link', 'unhandled_webhook_event', 'malformed_webhook')
      order by kind`);
    expect(rows).toEqual([
      { kind: 'malformed_webhook', ref_id: 'wh_malformed' },
      { kind: 'unhandled_webhook_event', ref_id: 'wh_other_kind' },
      { kind: 'webhook_for_unknown_claim_link', ref_id: 'cl_000000000000000000000000' },
    ]);
    const inbox = await db.execute<{ webhook_id: string; status: string }>(sql`
      select webhook_id, status from webhook_inbox where webhook_id in ('wh_unknown_link', 'wh_other_kind', 'wh_malformed')
      order by webhook_id`);
    expect(inbox.rows).toEqual([
      { webhook_id: 'wh_malformed', status: 'failed' },
      { webhook_id: 'wh_other_kind', status: 'processed' },
      { webhook_id: 'wh_unknown_link', status: 'failed' },
    ]);
  });
  it('behavior: a cancelled webhook that failed while its link was unknown is applied on replay and its findings resolve', async () => {
    const link = await createLink('1');
    await untilLinkSent(world, link.claimLinkId);
    // As after a create whose answer was lost: the payout does not yet know it made this link.
    await db.execute(sql`update payouts set create_outcome = 'unknown' where id = ${link.payoutId}`);
    await world.plainClient().cancelClaimLinkAutoPayout(link.claimLinkId);
    await world.advance(6);
    const delivered = await deliverWebhookOf(link.claimLinkId);
    expect(delivered.outcome.kind).toBe('unusable');
    const openFindings = async () =>
      (
        await db.execute<{ kind: string }>(sql`
          select kind from findings where resolved_at is null
            and ((ref_type = 'claim_link' and ref_id = ${link.claimLinkId})
              or (ref_type = 'webhook' and ref_id = ${delivered.webhookId}))
          order by kind`)
      ).rows.map((r) => r.kind);
    expect(await openFindings()).toEqual(['webhook_for_unknown_claim_link']);

    // The create is learnt, then the failed webhook is replayed.
    await db.execute(sql`update payouts set create_outcome = 'created' where id = ${link.payoutId}`);
    expect((await replayWebhooks(db, { kind: 'ids', webhookIds: [delivered.webhookId] })).kind).toBe(
      'replayed',
    );
    expect(await processInboxWebhook(deps, delivered.webhookId)).toMatchObject({
      kind: 'claim_link_applied',
    });
    expect(await openFindings()).toEqual(['cancelled_outside_stablebooks']);
    expect(await closeEntries(link.claimLinkId)).toHaveLength(1);
  });
});
