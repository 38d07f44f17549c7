import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { applyClaimLinkWebhook } from '../../../src/payouts/applyClaimLinkWebhook.ts';
import { cancelPayout } from '../../../src/payouts/cancelPayout.ts';
import { createPayout } from '../../../src/payouts/createPayout.ts';
import { expireClaimLinks } from '../../../src/payouts/expireClaimLinks.ts';
import { findPayout } from '../../../src/payouts/payoutRecord.ts';
import { refundsOverdue } from '../../../src/payouts/refundsOverdue.ts';
import { ref, startPayoutsWorld, untilLinkSent } from './payoutsKit.ts';

/**
 * The 14-day expiry on the sandbox clock (rule 7 `claim_link.expired`, once however often the job
 * runs) and the overdue-refund findings, which resolve once the refund is proven.
 */
const world = await startPayoutsWorld('payouts_expiry');
const { deps, db } = world;
const DAY_S = 24 * 60 * 60;
const GRACE_MS = 24 * 3_600_000;
const jobDeps = { ...deps, refundGraceMs: GRACE_MS };

async function createLink(amount: string) {
  const created = await createPayout(deps, {
    storeId: 'st_a',
    amount,
    coin: 'USDC',
    chain: 'sepolia',
    referenceId: ref('expiry'),
  });
  return { payoutId: created.payout.id, claimLinkId: created.payout.claimLinkId ?? '' };
}

async function closeEntries(claimLinkId: string) {
  const { rows } = await db.execute<{ kind: string; occurred_at: string }>(
    sql`select kind, occurred_at from ledger_entries where idempotency_key = ${`claim_link:closed:${claimLinkId}`}`,
  );
  return rows.map((r) => ({ kind: r.kind, occurred_at: new Date(r.occurred_at).toISOString() }));
}

async function openFindings() {
  const { rows } = await db.execute<{ kind: string; ref_id: string; severity: string }>(sql`
    select kind, ref_id, severity from findings
    where kind in ('refund_overdue', 'expiry_refund_overdue') and resolved_at is null order by kind, ref_id`);
  return rows;
}

describe('expireClaimLinks and refundsOverdue', () => {
  it('behavior: 14 days after funding an unclaimed link expires once, dated at its expiry; claimed and cancelled links stay', async () => {
    const open = await createLink('9');
    const claimed = await createLink('1');
    const cancelled = await createLink('2');
    for (const link of [open, claimed, cancelled]) await untilLinkSent(world, link.claimLinkId);
    await world.sb.control(`/_sandbox/claim_links/${claimed.claimLinkId}/claim`, {});
    // The chain side records a claim as claimed_at; here the 50108 of a cancel attempt teaches it.
    await cancelPayout(deps, claimed.payoutId).catch(() => undefined);
    await cancelPayout(deps, cancelled.payoutId);
    const fundedAt = (await findPayout(db, { id: open.payoutId }))?.fundedAt ?? new Date(0);

    // Short of 14 days: nothing.
    const now = () => world.sb.world.clock.now();
    await world.advance((fundedAt.getTime() + 14 * DAY_S * 1000 - 60_000 - now().getTime()) / 1000);
    expect(await expireClaimLinks(deps, now())).toBe(0);

    await world.advance(120);
    expect(await expireClaimLinks(deps, now())).toBe(1);
    expect(await expireClaimLinks(deps, now())).toBe(0);
    const expiresAt = new Date(fundedAt.getTime() + 14 * DAY_S * 1000);
    expect(await closeEntries(open.claimLinkId)).toEqual([
      { kind: 'claim_link.expired', occurred_at: expiresAt.toISOString() },
    ]);
    expect(await world.ledgerLines(open.claimLinkId)).toEqual([
      'claim_link.funded: assets:claim_pool 9000000',
      'claim_link.funded: assets:custody -9000000',
      'claim_link.expired: assets:claim_pool -9000000',
      'claim_link.expired: assets:refund_receivable 9000000',
    ]);
    expect(await findPayout(db, { id: open.payoutId })).toMatchObject({
      linkStatus: 'expired',
      expiredAt: expiresAt,
    });
    expect(await closeEntries(claimed.claimLinkId)).toEqual([]);
    expect((await closeEntries(cancelled.claimLinkId)).map((e) => e.kind)).toEqual(['claim_link.cancelled']);
    // The sandbox expired it too, and refunded it.
    const view = await world.sb.control<{ status: string }>(`/_sandbox/claim_links/${open.claimLinkId}`);
    expect(view.body.status).toBe('expired');

    // Two runs at once still expire nothing twice.
    const more = await createLink('4');
    await world.advance(14 * DAY_S + 1);
    const counts = await Promise.all([expireClaimLinks(deps, now()), expireClaimLinks(deps, now())]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await closeEntries(more.claimLinkId)).toHaveLength(1);
  });

  it('behavior: a refund not proven within the grace is a finding (cancelled or expired), resolved once refunded', async () => {
    const cancelled = await createLink('3');
    await untilLinkSent(world, cancelled.claimLinkId);
    await cancelPayout(deps, cancelled.payoutId);
    const cancelledAt = (await findPayout(db, { id: cancelled.payoutId }))?.cancelledAt ?? new Date(0);
    const at = (ms: number) => new Date(cancelledAt.getTime() + ms);

    // Within the grace: nothing new for this link.
    await refundsOverdue(jobDeps, at(GRACE_MS - 1000));
    expect((await openFindings()).some((f) => f.ref_id === cancelled.claimLinkId)).toBe(false);

    // Past it, a run scoped to another store neither opens this store's finding.
    await refundsOverdue(jobDeps, at(GRACE_MS + 1000), 'st_other');
    expect((await openFindings()).some((f) => f.ref_id === cancelled.claimLinkId)).toBe(false);

    // Past it: one finding per link, refreshed not duplicated (scoped to its own store, or to none).
    await refundsOverdue(jobDeps, at(GRACE_MS + 1000), 'st_a');
    expect((await openFindings()).some((f) => f.ref_id === cancelled.claimLinkId)).toBe(true);
    await refundsOverdue(jobDeps, at(GRACE_MS + 1000));
    await refundsOverdue(jobDeps, at(GRACE_MS + 2000));
    const open = await openFindings();
    expect(open).toContainEqual({
      kind: 'refund_overdue',
      ref_id: cancelled.claimLinkId,
      severity: 'warning',
    });
    // The links the first test expired are overdue too, as expiry refunds.
    expect(open.filter((f) => f.kind === 'expiry_refund_overdue').length).toBeGreaterThanOrEqual(1);
    const { rows } = await db.execute<{ n: string }>(sql`
      select count(*)::text as n from findings where ref_id = ${cancelled.claimLinkId} and kind = 'refund_overdue'`);
    expect(rows[0]?.n).toBe('1');
    const details = await db.execute<{ details: Record<string, unknown> }>(sql`
      select details from findings where ref_id = ${cancelled.claimLinkId} and kind = 'refund_overdue'`);
    expect(details.rows[0]?.details).toMatchObject({
      payout_id: cancelled.payoutId,
      amount: '3',
      coin: 'USDC',
      closed: 'cancelled',
      grace_hours: 24,
    });

    // The chain side proves the refund (rule 8) and sets refunded_at: the finding resolves.
    await db.execute(sql`update payouts set refunded_at = now() where id = ${cancelled.payoutId}`);
    expect((await refundsOverdue(jobDeps, at(GRACE_MS + 3000), 'st_other')).resolved).toBe(0);
    const result = await refundsOverdue(jobDeps, at(GRACE_MS + 3000));
    expect(result.resolved).toBe(1);
    expect((await openFindings()).some((f) => f.ref_id === cancelled.claimLinkId)).toBe(false);
  });
  it('behavior: a cancel reported for a link our books expired or saw claimed is a conflict finding only: no cancelled_at, no refund_overdue', async () => {
    const expired = await createLink('6');
    const claimed = await createLink('7');
    for (const link of [expired, claimed]) await untilLinkSent(world, link.claimLinkId);
    await world.sb.control(`/_sandbox/claim_links/${claimed.claimLinkId}/claim`, {});
    // The chain side records the claim (claimed_at, link_status).
    await db.execute(sql`
      update payouts set claimed_at = funded_at, link_status = 'claimed' where id = ${claimed.payoutId}`);
    const now = () => world.sb.world.clock.now();
    await world.advance(14 * DAY_S + 60);
    await expireClaimLinks(deps, now());
    const expiredAt = (await findPayout(db, { id: expired.payoutId }))?.expiredAt;
    expect(expiredAt).not.toBeNull();

    // The service then reports both cancelled (its webhook; for an expired link the expiry refund).
    for (const [i, link] of [expired, claimed].entries()) {
      const applied = await db.transaction((tx) =>
        applyClaimLinkWebhook(tx, deps, {
          storeId: 'st_a',
          webhookId: `wh_close_conflict_${i}_${link.claimLinkId}`,
          body: {
            event: 'cancelled',
            claim_link_id: link.claimLinkId,
            refund_tx_hash: `0x${'ab'.repeat(32)}`,
          },
        }),
      );
      expect(applied).toMatchObject({ kind: 'applied', newlyCancelled: false });
    }
    expect(await findPayout(db, { id: expired.payoutId })).toMatchObject({
      linkStatus: 'expired',
      expiredAt,
      cancelledAt: null,
    });
    expect(await findPayout(db, { id: claimed.payoutId })).toMatchObject({
      linkStatus: 'claimed',
      cancelledAt: null,
    });
    expect((await closeEntries(expired.claimLinkId)).map((e) => e.kind)).toEqual(['claim_link.expired']);
    expect(await closeEntries(claimed.claimLinkId)).toEqual([]);

    await refundsOverdue(jobDeps, new Date(now().getTime() + 2 * GRACE_MS));
    const open = (await openFindings()).filter((f) =>
      [expired.claimLinkId, claimed.claimLinkId].includes(f.ref_id),
    );
    expect(open).toEqual([
      { kind: 'expiry_refund_overdue', ref_id: expired.claimLinkId, severity: 'warning' },
    ]);
    const { rows } = await db.execute<{ kind: string; ref_id: string }>(sql`
      select kind, ref_id from findings
      where ref_id in (${expired.claimLinkId}, ${claimed.claimLinkId}) and resolved_at is null order by kind, ref_id`);
    expect(rows.map((r) => `${r.kind} ${r.ref_id}`).sort()).toEqual(
      [
        `claim_link_close_conflict ${claimed.claimLinkId}`,
        `claim_link_close_conflict ${expired.claimLinkId}`,
        `expiry_refund_overdue ${expired.claimLinkId}`,
      ].sort(),
    );
  });

  it('behavior: a refund_overdue left open on a link our books saw claimed resolves', async () => {
    const link = await createLink('8');
    await untilLinkSent(world, link.claimLinkId);
    await cancelPayout(deps, link.payoutId);
    const cancelledAt = (await findPayout(db, { id: link.payoutId }))?.cancelledAt ?? new Date(0);
    await refundsOverdue(jobDeps, new Date(cancelledAt.getTime() + 2 * GRACE_MS));
    expect((await openFindings()).some((f) => f.ref_id === link.claimLinkId)).toBe(true);
    // A row written before cancel refused to close claimed links: both cancelled and claimed.
    await db.execute(sql`update payouts set claimed_at = now() where id = ${link.payoutId}`);
    await refundsOverdue(jobDeps, new Date(cancelledAt.getTime() + 2 * GRACE_MS));
    expect((await openFindings()).some((f) => f.ref_id === link.claimLinkId)).toBe(false);
    // And none is opened again.
    await refundsOverdue(jobDeps, new Date(cancelledAt.getTime() + 3 * GRACE_MS));
    const { rows } = await db.execute<{ n: string }>(sql`
      select count(*)::text as n from findings where ref_id = ${link.claimLinkId} and kind = 'refund_overdue'`);
    expect(rows[0]?.n).toBe('1');
  });
});
