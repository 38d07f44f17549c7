import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import type { FindingKind } from '../findings/findingKinds.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { applyIntentSnapshot } from '../payments/applyIntentSnapshot.ts';
import { trackFromWebhook } from '../payments/intentTracking.ts';
import { claimLinkEventOf } from '../payouts/applyClaimLinkWebhook.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import { processClaimLinkWebhook } from './claimLinkWebhook.ts';
import type { InboxOutcome } from './inboxOutcome.ts';
import { markCheckoutWebhooksProcessed } from './markWebhooksProcessed.ts';
import {
  dataException,
  failUnprocessableWebhook,
  handleIntentReadError,
  namedIntentId,
  type WebhookTarget,
} from './webhookFailures.ts';

/**
 * Processes one stored webhook: parse it with the spec's model, fetch the full intent (the
 * webhook lacks the fee fields), apply both through applyIntentSnapshot and mark the row
 * processed, in one transaction. A claim-link `cancelled` webhook goes to applyClaimLinkWebhook
 * (payouts), also in one transaction with the row; other claim-link events are findings. Safe to
 * run twice, or by two workers at once: the second finds the row processed, or posts nothing new.
 * A read of the intent the service refuses, or a webhook no retry can process, never leaves the
 * payment unknown: its intent is tracked, so the poll sweeper books it (handleIntentReadError,
 * failUnprocessableWebhook).
 */
export async function processInboxWebhook(deps: DomainContext, webhookId: string): Promise<InboxOutcome> {
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
    finding?: { kind: FindingKind; details: Record<string, unknown> },
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
    if (row.endpoint === 'claim-links' && event === 'cancelled')
      return processClaimLinkWebhook(deps, { webhookId, storeId: row.store_id, body: json });
    // Other claim-link event kinds are not in the spec: a person sees them. (A body without an
    // event name is the spec's `cancelled`, see claimLinkEventOf.)
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
  const target: WebhookTarget = {
    webhookId,
    storeId: row.store_id,
    intentId: payload.all_svc_checkout_intent_id,
  };
  // Stamped before the request is sent: the answer is at least this recent, never more, so a
  // read that waited (retries, a slow answer) cannot pass for newer than a poll recorded meanwhile.
  const observedAt = deps.clock.now();
  let intent: CheckoutIntent;
  try {
    intent = await deps.client(row.store_id).getCheckoutIntent(payload.all_svc_checkout_intent_id);
  } catch (err) {
    return handleIntentReadError(deps, target, err);
  }
  try {
    const result = await deps.db.transaction(async (tx) => {
      const applied = await applyIntentSnapshot(tx, deps, {
        storeId: row.store_id,
        intent,
        source: 'webhook',
        observedAt,
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
  } catch (err) {
    const refused = dataException(err);
    if (!refused) throw err;
    return deps.db.transaction((tx) => failUnprocessableWebhook(tx, deps.clock.now(), target, refused));
  }
}
