import { sql } from 'drizzle-orm';
import { EXPIRY_REFUND_OVERDUE, REFUND_OVERDUE } from '../../payouts/refundsOverdue.ts';
import { insertFound } from '../foundFindings.ts';
import { type CheckContext, type CheckOutcome, check, decimalText, storeFilter } from './checkContext.ts';

/**
 * Clearing: money that should only pass through an account and has stayed too long.
 * - assets:in_transit: a payment the service confirmed whose chain proof has not cleared it within
 *   RECON_IN_TRANSIT_MINUTES: `webhook_without_chain_proof` (per intent, from the ledger itself);
 * - assets:refund_receivable: cancelled or expired links whose refund is late (the refunds-overdue
 *   check of the payouts, run just before; it keeps those findings' lifecycle);
 * - assets:suspense: transfers nobody matched (their findings are written when the transfer is).
 */
export async function clearInTransit(ctx: CheckContext): Promise<CheckOutcome> {
  const cutoff = new Date(ctx.now.getTime() - ctx.settings.inTransitWindowMs).toISOString();
  const minutes = Math.round(ctx.settings.inTransitWindowMs / 60_000);
  // Every in_transit posting meets its entry: a hash join over both tables, which the planner
  // (estimating an even spread of postings over the accounts) would otherwise do as one index
  // lookup per posting, several times slower. Back on after this statement.
  await ctx.tx.execute(sql`set local enable_nestloop = off`);
  const n = await insertFound(
    ctx.tx,
    sql`
    select 'webhook_without_chain_proof', 'warning', e.store_id, 'checkout_intent', e.ref_id,
           jsonb_build_object(
             'waiting', ${decimalText(sql`sum(p.amount)`, sql`a.decimals`)}, 'token', a.symbol,
             'chain_id', a.chain_id, 'confirmed_at', min(e.occurred_at), 'window_minutes', ${minutes}::int)
    from ledger_accounts a
    join ledger_postings p on p.account_id = a.id
    join ledger_entries e on e.id = p.entry_id
    where a.code like 'assets:in\\_transit:%' and e.ref_type = 'checkout_intent'
      and ${storeFilter(sql`a.store_id`, ctx.storeId)}
    group by e.store_id, e.ref_id, a.symbol, a.chain_id, a.decimals
    having sum(p.amount) <> 0 and min(e.occurred_at) < ${cutoff}::timestamptz`,
  );
  await ctx.tx.execute(sql`set local enable_nestloop = on`);
  return check(
    'clearing.in_transit',
    'clearing',
    n,
    `confirmed payments without a chain proof after ${minutes} min`,
    [{ kind: 'webhook_without_chain_proof', refType: 'checkout_intent' }],
  );
}

export function clearRefunds(ctx: CheckContext): Promise<CheckOutcome> {
  return openFindingsCheck(
    ctx,
    'clearing.refund_receivable',
    [REFUND_OVERDUE, EXPIRY_REFUND_OVERDUE],
    'claim-link refunds later than the grace',
  );
}

export function clearSuspense(ctx: CheckContext): Promise<CheckOutcome> {
  return openFindingsCheck(
    ctx,
    'clearing.suspense',
    ['unmatched_transfer_in'],
    'transfers into a watched wallet that match nothing',
  );
}

/** A clearing check whose findings another part keeps (their lifecycle is theirs): count the open ones. */
async function openFindingsCheck(
  ctx: CheckContext,
  name: string,
  kinds: string[],
  detail: string,
): Promise<CheckOutcome> {
  const { rows } = await ctx.tx.execute<{ n: string }>(sql`
    select count(*)::text as n from findings
    where kind in (${sql.join(
      kinds.map((k) => sql`${k}`),
      sql`, `,
    )}) and resolved_at is null and ${storeFilter(sql`store_id`, ctx.storeId)}`);
  return check(name, 'clearing', Number(rows[0]?.n ?? 0), detail, []);
}
