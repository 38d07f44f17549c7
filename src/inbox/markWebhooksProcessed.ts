import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import type { CheckoutWebhookPayload } from '../svc/models/checkoutWebhook.ts';

/**
 * The findings a webhook's failed processing raised about the webhook itself. A later success
 * (a replay after a fix, or the service now knowing the intent) clears them, so that no open
 * finding points at a webhook that is booked.
 */
export const WEBHOOK_FAILURE_FINDINGS = [
  'malformed_webhook',
  'webhook_for_unknown_intent',
  'webhook_unprocessable',
  'webhook_for_unknown_claim_link',
] as const;

/**
 * Marks applied checkout webhooks processed, with the intent they concern and the paid amount
 * they reported (a decimal of coins, as sent; reconciliation compares it), and resolves the
 * failure findings of those processed after an earlier attempt, in one statement.
 */
export async function markCheckoutWebhooksProcessed(
  tx: DbExecutor,
  webhooks: Array<{ webhookId: string; payload: CheckoutWebhookPayload }>,
): Promise<void> {
  await executePrepared(
    tx,
    sql`
      with marked as (
        update webhook_inbox w set status = 'processed', processed_at = now(), attempts = attempts + 1, error = null,
               ref_id = x.ref_id, actual_paid_amount = x.paid::numeric
        from unnest(${sql.param(webhooks.map((w) => w.webhookId))}::text[],
                    ${sql.param(webhooks.map((w) => w.payload.all_svc_checkout_intent_id))}::text[],
                    ${sql.param(webhooks.map((w) => w.payload.actual_paid_amount))}::text[]) as x(webhook_id, ref_id, paid)
        where w.webhook_id = x.webhook_id
        returning w.webhook_id, w.attempts
      )
      update findings set resolved_at = now()
      where ref_type = 'webhook' and resolved_at is null
        and kind = any(${sql.param([...WEBHOOK_FAILURE_FINDINGS])}::text[])
        and ref_id in (select webhook_id from marked where attempts > 1)`,
  );
}

/** Resolves the failure findings of one webhook (see WEBHOOK_FAILURE_FINDINGS). */
export async function resolveWebhookFailureFindings(tx: DbExecutor, webhookId: string): Promise<void> {
  for (const kind of WEBHOOK_FAILURE_FINDINGS)
    await resolveFinding(tx, kind, { type: 'webhook', id: webhookId });
}
