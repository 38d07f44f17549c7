import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { applyClaimLinkWebhook, claimLinkEventOf } from '../payouts/applyClaimLinkWebhook.ts';
import { recordFinding, resolveFinding } from '../recon/recordFinding.ts';
import { SvcApiError } from '../svc/errors.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { type CheckoutWebhookPayload, checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';

export type InboxOutcome =
  | { kind: 'already_done' }
  | { kind: 'applied'; intentId: string; storeId: string; settled: boolean }
  | { kind: 'claim_link_applied'; claimLinkId: string; storeId: string }
  | { kind: 'unusable'; reason: string };

/**
 * Processes one stored webhook: parse it with the spec's model, fetch the full intent (the
 * webhook lacks the fee fields), apply both through applyIntentSnapshot and mark the row
 * processed, in one transaction. A claim-link `cancelled` webhook goes to applyClaimLinkWebhook
 * (payouts), also in one transaction with the row; other claim-link events are findings. Safe to
 * run twice, or by two workers at once: the second finds the row processed, or posts nothing new.
 */
export async function processInboxWebhook(deps: PaymentsDeps, webhookId: string): Promise<InboxOutcome> {
  const { rows } = await executePrepared<{
    store_id: string;
    endpoint: string;
    status: string;
    body: Buffer;
  }>(
    deps.db,
    sql`
    select store_id, endpoint, status, body from webhook_inbox where webhook_id = ${webhookId}`,
  );
  const row = rows[0];
  if (row?.status !== 'received') return { kind: 'already_done' };
  const ref = { type: 'webhook', id: webhookId };

  const finish = async (
    status: 'processed' | 'failed',
    reason: string | null,
    finding?: { kind: string; details: Record<string, unknown> },
    alsoInTransaction?: (tx: DbExecutor) => Promise<void>,
  ) => {
    await deps.db.transaction(async (tx) => {
      await alsoInTransaction?.(tx);
      await tx.execute(sql`
        update webhook_inbox set status = ${status}, processed_at = now(), attempts = attempts + 1, error = ${reason}
        where webhook_id = ${webhookId} and status = 'received'`);
      if (finding)
        await recordFinding(
          tx,
          { kind: finding.kind, severity: 'warning', ref, details: finding.details },
          row.store_id,
        );
    });
  };

  const json: unknown = JSON.parse(Buffer.from(row.body).toString('utf8'));
  if (row.endpoint !== 'checkout') {
    const event = claimLinkEventOf(json);
    if (row.endpoint === 'claim-links' && event === 'cancelled') {
      // Applied and marked in one transaction: a repeat finds the row processed.
      const applied = await deps.db.transaction(async (tx): Promise<InboxOutcome> => {
        const locked = await tx.execute<{ status: string }>(
          sql`select status from webhook_inbox where webhook_id = ${webhookId} for update`,
        );
        if (locked.rows[0]?.status !== 'received') return { kind: 'already_done' };
        const outcome = await applyClaimLinkWebhook(tx, deps, {
          storeId: row.store_id,
          webhookId,
          body: json,
        });
        const failed = outcome.kind === 'unusable';
        if (!failed) await resolveWebhookFailureFindings(tx, webhookId);
        await tx.execute(sql`
          update webhook_inbox set status = ${failed ? 'failed' : 'processed'}, processed_at = now(),
                 attempts = attempts + 1, error = ${failed ? outcome.reason : null},
                 ref_id = ${outcome.kind === 'applied' ? outcome.claimLinkId : null}
          where webhook_id = ${webhookId}`);
        return outcome.kind === 'applied'
          ? { kind: 'claim_link_applied', claimLinkId: outcome.claimLinkId, storeId: row.store_id }
          : outcome;
      });
      return applied;
    }
    // Other claim-link event kinds are not in the spec: a person sees them.
    await finish('processed', null, {
      kind: 'unhandled_webhook_event',
      details: { endpoint: row.endpoint, event },
    });
    return { kind: 'unusable', reason: `unhandled ${row.endpoint} event ${event}` };
  }
  const parsed = checkoutWebhookPayloadSchema.safeParse(json);
  if (!parsed.success) {
    const reason = parsed.error.issues
      .map((i) => `${i.path.join('.')}: ${i.message}`)
      .slice(0, 3)
      .join('; ');
    // The payload is unusable, but the intent it names may still be learnt from the API: we
    // answered 200, so the service will not send it again, and an intent created elsewhere would
    // otherwise never be polled.
    const intentId = namedIntentId(json);
    await finish(
      'failed',
      reason,
      { kind: 'malformed_webhook', details: { reason, tracked_intent: intentId } },
      intentId ? (tx) => trackFromWebhook(tx, intentId, row.store_id, deps.clock.now()) : undefined,
    );
    return { kind: 'unusable', reason };
  }
  const payload = parsed.data;
  let intent: CheckoutIntent;
  try {
    intent = await deps.client(row.store_id).getCheckoutIntent(payload.all_svc_checkout_intent_id);
  } catch (err) {
    if (isUnknownIntentError(err)) {
      await finish('failed', err.message, {
        kind: 'webhook_for_unknown_intent',
        details: { intent_id: payload.all_svc_checkout_intent_id, code: err.code },
      });
      return { kind: 'unusable', reason: err.message };
    }
    throw err;
  }
  const result = await deps.db.transaction(async (tx) => {
    const applied = await applyIntentSnapshot(tx, deps, {
      storeId: row.store_id,
      intent,
      source: 'webhook',
      observedAt: deps.clock.now(),
      webhook: payload,
    });
    await markCheckoutWebhooksProcessed(tx, [{ webhookId, payload }]);
    return applied;
  });
  return {
    kind: 'applied',
    intentId: intent.all_svc_checkout_intent_id,
    storeId: row.store_id,
    settled: result.settled,
  };
}

/** The intent id a webhook names, when it has the spec's form (an ObjectId), else null. */
function namedIntentId(json: unknown): string | null {
  if (typeof json !== 'object' || json === null) return null;
  const id = (json as Record<string, unknown>).all_svc_checkout_intent_id;
  return typeof id === 'string' && /^[0-9a-f]{24}$/i.test(id) ? id : null;
}

/** Starts tracking an intent (the poll sweeper polls it first); an intent already tracked is left as it is. */
async function trackFromWebhook(tx: DbExecutor, intentId: string, storeId: string, now: Date): Promise<void> {
  await tx.execute(sql`
    insert into checkout_intents (id, store_id, tracked_via, tracked_at)
    values (${intentId}, ${storeId}, 'webhook', ${now.toISOString()}::timestamptz)
    on conflict (id) do nothing`);
}

/** The service does not know the intent, or not for this store: retrying cannot help. */
export function isUnknownIntentError(err: unknown): err is SvcApiError {
  return err instanceof SvcApiError && (err.code === 50001 || err.code === 30001);
}

/**
 * The findings a webhook's failed processing raised about the webhook itself. A later success
 * (a replay after a fix, or the service now knowing the intent) clears them, so that no open
 * finding points at a webhook that is booked.
 */
export const WEBHOOK_FAILURE_FINDINGS = [
  'malformed_webhook',
  'webhook_for_unknown_intent',
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
