import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';

export const REFUND_OVERDUE = 'refund_overdue';
export const EXPIRY_REFUND_OVERDUE = 'expiry_refund_overdue';

/**
 * Refunds that are late (docs/accounting.md, "Findings"): a link cancelled (or expired) longer than the
 * refund grace ago whose refund has not been proven (refunded_at, set when the chain shows the
 * refund final) gets a `refund_overdue` (or `expiry_refund_overdue`) finding, severity warning;
 * once refunded_at is set, the open finding resolves. A link our books saw claimed is owed no
 * refund, whatever else was reported for it: no finding, and an open one resolves. Two set-based
 * statements with the semantics of recordFinding / resolveFinding (one open finding per kind and
 * link, refreshed while it lasts), so a run costs the same for ten links or ten thousand.
 */
export async function refundsOverdue(
  deps: Pick<DomainContext, 'db' | 'logger'> & {
    /** REFUND_GRACE_HOURS: how long a cancelled or expired link may wait for its refund. */
    refundGraceMs: number;
  },
  now: Date,
  /** Only this store's links (a store-scoped reconciliation run); null or absent: every store. */
  storeId: string | null = null,
): Promise<{ overdue: number; resolved: number }> {
  const cutoff = new Date(now.getTime() - deps.refundGraceMs).toISOString();
  const graceHours = deps.refundGraceMs / 3_600_000;
  const opened = await deps.db.execute<{ n: string }>(sql`
    with overdue as (
      select p.*, coalesce(p.cancelled_at, p.expired_at) as closed_at,
             case when p.cancelled_at is not null then ${REFUND_OVERDUE} else ${EXPIRY_REFUND_OVERDUE} end as kind
      from payouts p
      where p.claim_link_id is not null and p.refunded_at is null and p.claimed_at is null
        and coalesce(p.cancelled_at, p.expired_at) <= ${cutoff}::timestamptz
        and (${storeId}::text is null or p.store_id = ${storeId})
    ), written as (
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      select kind, 'warning', store_id, 'claim_link', claim_link_id,
             jsonb_build_object(
               'payout_id', id, 'reference_id', reference_id, 'amount', amount,
               'coin', case coin when 1 then 'USDT' else 'USDC' end, 'chain_id', chain_id,
               'closed', case when cancelled_at is not null then 'cancelled' else 'expired' end,
               'closed_at', closed_at, 'grace_hours', ${graceHours}::numeric,
               'refund_tx_hash', refund_tx_hash)
      from overdue
      on conflict (kind, ref_type, ref_id) where resolved_at is null
      do update set last_seen_at = now(), severity = excluded.severity, details = excluded.details
      returning 1
    )
    select count(*)::text as n from written`);
  const resolved = await deps.db.execute<{ n: string }>(sql`
    with done as (
      update findings f set resolved_at = now()
      from payouts p
      where f.kind in (${REFUND_OVERDUE}, ${EXPIRY_REFUND_OVERDUE}) and f.resolved_at is null
        and f.ref_type = 'claim_link' and f.ref_id = p.claim_link_id
        and (p.refunded_at is not null or p.claimed_at is not null)
        and (${storeId}::text is null or p.store_id = ${storeId})
      returning 1
    )
    select count(*)::text as n from done`);
  const result = { overdue: Number(opened.rows[0]?.n ?? 0), resolved: Number(resolved.rows[0]?.n ?? 0) };
  if (result.overdue > 0 || result.resolved > 0) deps.logger.info(result, 'claim-link refunds checked');
  return result;
}
