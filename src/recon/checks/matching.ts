import { sql } from 'drizzle-orm';
import { insertFound } from '../foundFindings.ts';
import {
  baseUnits,
  type CheckContext,
  type CheckOutcome,
  check,
  decimalText,
  storeFilter,
  tokensTable,
} from './checkContext.ts';

const NON_TERMINAL = [1, 2, 3, 4, 5, 10];

/**
 * Matching, per confirmed intent: the API's view (checkout_intents), the webhooks (webhook_inbox
 * by ref_id, their actual_paid_amount as stored at processing, never parsed from the bodies) and the chain (what rule 2
 * allocated to the intent, its payment and a lone log's excess, summed: a payment split over two
 * transfers matches one-to-many, a transfer paying two intents one-to-one each), side by side, in one pass:
 * - missing_webhook: confirmed longer than RECON_WEBHOOK_MINUTES ago and no checkout webhook;
 * - amount_mismatch: a webhook's actual_paid_amount differs from the API's, or the chain's sum
 *   differs from the API's net_income_amount, by more than RECON_AMOUNT_TOLERANCE base units;
 * - fee_arithmetic_mismatch: actual_paid_amount − service_fee_amount ≠ net_income_amount;
 * - underpaid / overpaid: actual_paid_amount below / above amount_coins (information).
 * The last three repeat what rule 1 and rule 2 report when they book, so a finding written there
 * is refreshed, not duplicated, and it resolves only if the facts changed.
 */
export async function matchIntents(ctx: CheckContext): Promise<CheckOutcome> {
  const webhookCutoff = new Date(ctx.now.getTime() - ctx.settings.webhookWindowMs).toISOString();
  const tol = ctx.settings.amountTolerance.toString();
  const d = sql`f.decimals`;
  const n = await insertFound(
    ctx.tx,
    sql`
    with m as (
      select ci.id, ci.store_id, ci.chain_id, tk.symbol, tk.decimals, tk.unit, ci.confirmed_at,
             u.r, u.p, u.f, u.net,
             wh.n as webhooks, wh.paid_min, wh.paid_max, ch.n as transfers, ch.value as chain_value
      from checkout_intents ci
      join ${tokensTable(ctx.chains)} on tk.chain_id = ci.chain_id and tk.token = lower(ci.coin_contract)
      left join (
        select w.ref_id, count(*) as n, min(w.actual_paid_amount) as paid_min, max(w.actual_paid_amount) as paid_max
        from webhook_inbox w
        where w.endpoint = 'checkout' and w.status = 'processed' and w.ref_id is not null
        group by w.ref_id
      ) wh on wh.ref_id = ci.id
      -- The chain's side is what rule 2 allocated to the intent (its payment and any excess of a
      -- lone log), never the values of the transfers it is the matched_ref of: one log may pay
      -- several intents (a bundle: the first proof's excess is the others' shares), and a
      -- payment in pieces is several transfers (docs/accounting.md, "Pieces and bundles").
      left join (
        select a.obligation_id as matched_ref, count(distinct a.transfer_id) as n, sum(a.amount) as value
        from allocations a
        where a.obligation_type = 'checkout_intent' and a.side = 'in'
          and a.purpose in ('payment', 'payment_excess')
        group by a.obligation_id
        having sum(a.amount) > 0
      ) ch on ch.matched_ref = ci.id
      -- Each amount is parsed once per intent: "offset 0" keeps the planner from copying these
      -- expressions into every place the checks below read them.
      cross join lateral (
        select ${baseUnits(sql`ci.amount_coins`, sql`tk.unit`)} as r,
               ${baseUnits(sql`ci.actual_paid_amount`, sql`tk.unit`)} as p,
               ${baseUnits(sql`ci.service_fee_amount`, sql`tk.unit`)} as f,
               ${baseUnits(sql`ci.net_income_amount`, sql`tk.unit`)} as net
        offset 0
      ) u
      where ci.status = 20 and ci.actual_paid_amount is not null and ${storeFilter(sql`ci.store_id`, ctx.storeId)}
    ), flagged as (
      select m.*,
             m.webhooks is null and m.confirmed_at < ${webhookCutoff}::timestamptz as missing_webhook,
             m.p - m.f <> m.net as fee_mismatch,
             (m.webhooks is not null and (abs(m.paid_min * m.unit - m.p) > ${tol}::numeric
                                       or abs(m.paid_max * m.unit - m.p) > ${tol}::numeric))
               or (m.chain_value is not null and m.p - m.f = m.net and abs(m.chain_value - m.net) > ${tol}::numeric)
               as amount_mismatch
      from m
    )
    select k.kind, k.severity, f.store_id, 'checkout_intent', f.id, k.details
    from flagged f
    cross join lateral (values
      ('missing_webhook', 'warning', f.missing_webhook,
       jsonb_build_object('confirmed_at', f.confirmed_at, 'token', f.symbol, 'chain_id', f.chain_id,
                          'actual_paid_amount', ${decimalText(sql`f.p`, d)})),
      ('amount_mismatch', 'warning', f.amount_mismatch,
       jsonb_build_object('token', f.symbol, 'chain_id', f.chain_id,
                          'api_actual_paid_amount', ${decimalText(sql`f.p`, d)},
                          'api_net_income_amount', ${decimalText(sql`f.net`, d)},
                          'webhook_actual_paid_amount_min', f.paid_min::text,
                          'webhook_actual_paid_amount_max', f.paid_max::text,
                          'chain_transfers', f.transfers,
                          'chain_amount', case when f.chain_value is null then null else ${decimalText(sql`f.chain_value`, d)} end)),
      ('fee_arithmetic_mismatch', 'warning', f.fee_mismatch,
       jsonb_build_object('token', f.symbol, 'chain_id', f.chain_id,
                          'actual_paid_amount', ${decimalText(sql`f.p`, d)},
                          'service_fee_amount', ${decimalText(sql`f.f`, d)},
                          'net_income_amount', ${decimalText(sql`f.net`, d)},
                          'expected_net_income_amount', ${decimalText(sql`f.p - f.f`, d)})),
      ('underpaid', 'info', f.p < f.r,
       jsonb_build_object('token', f.symbol, 'chain_id', f.chain_id,
                          'amount_coins', ${decimalText(sql`f.r`, d)},
                          'actual_paid_amount', ${decimalText(sql`f.p`, d)},
                          'difference', ${decimalText(sql`f.r - f.p`, d)})),
      ('overpaid', 'info', f.p > f.r,
       jsonb_build_object('token', f.symbol, 'chain_id', f.chain_id,
                          'amount_coins', ${decimalText(sql`f.r`, d)},
                          'actual_paid_amount', ${decimalText(sql`f.p`, d)},
                          'difference', ${decimalText(sql`f.p - f.r`, d)}))
    ) as k(kind, severity, hit, details)
    where (f.missing_webhook or f.amount_mismatch or f.fee_mismatch or f.p <> f.r) and k.hit`,
  );
  return check(
    'matching.intents',
    'matching',
    n,
    'confirmed intents: API, webhooks and chain transfers side by side',
    (['missing_webhook', 'amount_mismatch', 'fee_arithmetic_mismatch', 'underpaid', 'overpaid'] as const).map(
      (kind) => ({
        kind,
        refType: 'checkout_intent',
      }),
    ),
  );
}

/** stuck_intent: non-terminal longer than RECON_STUCK_HOURS (MANUAL_OPERATION and SEND_BACK included). */
export async function matchStuckIntents(ctx: CheckContext): Promise<CheckOutcome> {
  const cutoff = new Date(ctx.now.getTime() - ctx.settings.stuckMs).toISOString();
  const statuses = sql.join(
    NON_TERMINAL.map((s) => sql`${s}`),
    sql`, `,
  );
  const n = await insertFound(
    ctx.tx,
    sql`
    select 'stuck_intent', case when ci.status in (4, 5) then 'warning' else 'info' end, ci.store_id,
           'checkout_intent', ci.id,
           jsonb_build_object('status', ci.status, 'since', coalesce(ci.status_changed_at, ci.tracked_at),
                              'hours', round(extract(epoch from (${ctx.now.toISOString()}::timestamptz
                                             - coalesce(ci.status_changed_at, ci.tracked_at))) / 3600, 1))
    from checkout_intents ci
    where ci.status in (${statuses}) and coalesce(ci.status_changed_at, ci.tracked_at) < ${cutoff}::timestamptz
      and ${storeFilter(sql`ci.store_id`, ctx.storeId)}`,
  );
  return check(
    'matching.stuck_intents',
    'matching',
    n,
    `intents not terminal after ${Math.round(ctx.settings.stuckMs / 3_600_000)} h`,
    [{ kind: 'stuck_intent', refType: 'checkout_intent' }],
  );
}

/**
 * intent_creation_unresolved: an `intents create` call whose outcome nobody knows (`unknown`: the
 * request may have reached the service; or still `pending` after RECON_WEBHOOK_MINUTES: the
 * process died during the call) while no tracked intent of the store has its order_id. The
 * service may have created an intent that can be paid and that we do not follow; creating it
 * again could make a second one. It resolves once an intent with that order_id is tracked (its
 * webhook, or `intents track <id>`); a creation without order_id can only be acknowledged.
 */
export async function matchIntentCreations(ctx: CheckContext): Promise<CheckOutcome> {
  const cutoff = new Date(ctx.now.getTime() - ctx.settings.webhookWindowMs).toISOString();
  const n = await insertFound(
    ctx.tx,
    sql`
    select 'intent_creation_unresolved', 'warning', c.store_id, 'intent_creation', c.id::text,
           jsonb_build_object('outcome', c.outcome, 'order_id', c.order_id, 'requested_at', c.created_at,
                              'error', left(c.error, 300),
                              'action', 'find the intent at the service (by order_id) and run: stablebooks intents track <id> --store ' || c.store_id)
    from checkout_intent_creations c
    where (c.outcome = 'unknown' or (c.outcome = 'pending' and c.created_at < ${cutoff}::timestamptz))
      and ${storeFilter(sql`c.store_id`, ctx.storeId)}
      and not exists (select 1 from checkout_intents i
                      where i.store_id = c.store_id and i.order_id is not null and i.order_id = c.order_id)`,
  );
  return check(
    'matching.intent_creations',
    'matching',
    n,
    'intent creations whose outcome is unknown and whose intent is not tracked',
    [{ kind: 'intent_creation_unresolved', refType: 'intent_creation' }],
  );
}

/**
 * Per claim link: the service's view (payouts), the webhook and the chain. A link whose refund
 * the chain proved (refunded_at) longer than RECON_WEBHOOK_MINUTES ago but whose `cancelled`
 * webhook never came: missing_webhook. (Funding, claim and refund amounts are compared with the
 * chain when the matcher books them: funding_mismatch, amount_mismatch on the claim link.)
 */
export async function matchClaimLinks(ctx: CheckContext): Promise<CheckOutcome> {
  const cutoff = new Date(ctx.now.getTime() - ctx.settings.webhookWindowMs).toISOString();
  const n = await insertFound(
    ctx.tx,
    sql`
    select 'missing_webhook', 'warning', p.store_id, 'claim_link', p.claim_link_id,
           jsonb_build_object('payout_id', p.id, 'reference_id', p.reference_id, 'cancelled_at', p.cancelled_at,
                              'refunded_at', p.refunded_at, 'refund_tx_hash', p.refund_tx_hash)
    from payouts p
    where p.claim_link_id is not null and p.cancelled_at is not null and p.refunded_at is not null
      and p.refunded_at < ${cutoff}::timestamptz and ${storeFilter(sql`p.store_id`, ctx.storeId)}
      and not exists (
        select 1 from webhook_inbox w
        where w.endpoint = 'claim-links' and w.status = 'processed' and w.ref_id = p.claim_link_id)`,
  );
  // The service says the link was claimed (a 50108 to a cancel, a create replay:
  // claimed_reported_at; or claiming) but the chain side has not booked the claim leaving its
  // pool: rule 6 is missing, the link's money still sits in assets:claim_pool, and a claimed link
  // is never expired, so nothing else would tell. Dated from the service's report (a later write
  // to the row does not restart the wait); a link without one (claiming, or a row from before the
  // column) from its last update. Without a known pool the chain side cannot see the claim at all.
  const inTransitCutoff = new Date(ctx.now.getTime() - ctx.settings.inTransitWindowMs).toISOString();
  const unproven = await insertFound(
    ctx.tx,
    sql`
    select 'claim_unproven', 'warning', p.store_id, 'claim_link', p.claim_link_id,
           jsonb_build_object('payout_id', p.id, 'reference_id', p.reference_id, 'link_status', p.link_status,
                              'claimed_reported_at', p.claimed_reported_at,
                              'since', coalesce(p.claimed_reported_at, p.updated_at), 'pool_address', p.pool_address,
                              'what', case when p.claimed_reported_at is not null
                                             then 'the service reported the link claimed; no claim out of its pool is booked on chain (rule 6): its amount stays in claim_pool'
                                           else 'the service reports the link ' || p.link_status || '; no claim out of its pool is booked on chain (rule 6): its amount stays in claim_pool' end
                                      || case when p.pool_address is null
                                             then '; its pool is not known (its funding is not booked), so the chain side cannot see the claim'
                                           else '' end)
    from payouts p
    where p.claim_link_id is not null and p.claimed_at is null
      and (p.claimed_reported_at is not null or p.link_status in ('claiming', 'claimed'))
      and coalesce(p.claimed_reported_at, p.updated_at) < ${inTransitCutoff}::timestamptz
      and ${storeFilter(sql`p.store_id`, ctx.storeId)}`,
  );
  return check(
    'matching.claim_links',
    'matching',
    n + unproven,
    'claim links: cancelled ones with refund and webhook, claimed ones with the claim on chain',
    [
      { kind: 'missing_webhook', refType: 'claim_link' },
      { kind: 'claim_unproven', refType: 'claim_link' },
    ],
  );
}
