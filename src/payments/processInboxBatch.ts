import { sql } from 'drizzle-orm';
import type { ItemResult } from '../batching/microBatcher.ts';
import { executePrepared } from '../db/executePrepared.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { type CheckoutWebhookPayload, checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';
import {
  type InboxOutcome,
  isUnknownIntentError,
  markCheckoutWebhooksProcessed,
  processInboxWebhook,
} from './processInboxWebhook.ts';

interface Ready {
  webhookId: string;
  storeId: string;
  payload: CheckoutWebhookPayload;
  intent: CheckoutIntent;
}

/**
 * Processes several stored webhooks with one read of the inbox and one transaction for all the
 * checkout webhooks among them (group commit on the worker side: a payment's begin, commit and
 * inbox round trips are shared by the batch). Each webhook gets exactly what
 * processInboxWebhook would do, and anything out of the plain path goes through
 * processInboxWebhook itself: claim-link events, bodies that do not parse, intents the API would
 * not give, and every webhook of a batch whose transaction failed (so one bad webhook fails only
 * its own job). Intents are applied in id order, so two batches lock them in one order. Safe to
 * run twice or beside another worker, like processInboxWebhook.
 */
export async function processInboxBatch(
  deps: PaymentsDeps,
  webhookIds: string[],
): Promise<Array<ItemResult<InboxOutcome>>> {
  const alone = (id: string): Promise<ItemResult<InboxOutcome>> =>
    processInboxWebhook(deps, id).then(
      (value) => ({ ok: true, value }),
      (err: unknown) => ({ ok: false, error: err instanceof Error ? err : new Error(String(err)) }),
    );
  const first = webhookIds[0];
  if (webhookIds.length === 1 && first !== undefined) return [await alone(first)];

  const { rows } = await executePrepared<{
    webhook_id: string;
    store_id: string;
    endpoint: string;
    body: Buffer;
  }>(
    deps.db,
    sql`
      select webhook_id, store_id, endpoint, body from webhook_inbox
      where webhook_id = any(${sql.param(webhookIds)}::text[]) and status = 'received'`,
  );
  const byId = new Map(rows.map((r) => [r.webhook_id, r]));
  const results = new Map<string, Promise<ItemResult<InboxOutcome>>>();
  const fetching: Array<Promise<Ready | undefined>> = [];
  for (const webhookId of new Set(webhookIds)) {
    const row = byId.get(webhookId);
    if (!row) {
      results.set(webhookId, Promise.resolve({ ok: true, value: { kind: 'already_done' } }));
      continue;
    }
    const payload = row.endpoint === 'checkout' ? parseCheckout(row.body) : undefined;
    if (!payload) {
      results.set(webhookId, alone(webhookId));
      continue;
    }
    fetching.push(
      // Inside a promise: a store missing from STORES_FILE throws at once, and must fail only
      // its own webhook, not the batch.
      Promise.resolve()
        .then(() => deps.client(row.store_id).getCheckoutIntent(payload.all_svc_checkout_intent_id))
        .then(
          (intent): Ready => ({ webhookId, storeId: row.store_id, payload, intent }),
          (err: unknown) => {
            // An intent the service does not know is recorded by the webhook's own path (failed,
            // with a finding). Any other error is the job's: asking again at once would double
            // the calls while the service struggles, so the job retries it later (after the
            // key's pause, for a 40001).
            results.set(
              webhookId,
              isUnknownIntentError(err)
                ? alone(webhookId)
                : Promise.resolve({ ok: false, error: err instanceof Error ? err : new Error(String(err)) }),
            );
            return undefined;
          },
        ),
    );
  }
  const ready = (await Promise.all(fetching)).filter((r): r is Ready => r !== undefined);
  ready.sort(
    (a, b) =>
      compare(a.intent.all_svc_checkout_intent_id, b.intent.all_svc_checkout_intent_id) ||
      compare(a.webhookId, b.webhookId),
  );

  if (ready.length > 0) {
    try {
      const applied = await deps.db.transaction(async (tx) => {
        const out: Array<{ ready: Ready; settled: boolean }> = [];
        for (const r of ready) {
          const result = await applyIntentSnapshot(tx, deps, {
            storeId: r.storeId,
            intent: r.intent,
            source: 'webhook',
            observedAt: deps.clock.now(),
            webhook: r.payload,
          });
          out.push({ ready: r, settled: result.settled });
        }
        await markCheckoutWebhooksProcessed(tx, ready);
        return out;
      });
      for (const { ready: r, settled } of applied) {
        results.set(
          r.webhookId,
          Promise.resolve({
            ok: true,
            value: {
              kind: 'applied',
              intentId: r.intent.all_svc_checkout_intent_id,
              storeId: r.storeId,
              settled,
            },
          }),
        );
      }
    } catch (err) {
      deps.logger.warn(
        { err, size: ready.length },
        'webhook batch failed; processing its webhooks one by one',
      );
      for (const r of ready) results.set(r.webhookId, alone(r.webhookId));
    }
  }
  return Promise.all(webhookIds.map((id) => results.get(id) ?? alone(id)));
}

function parseCheckout(body: Buffer): CheckoutWebhookPayload | undefined {
  try {
    const parsed = checkoutWebhookPayloadSchema.safeParse(JSON.parse(Buffer.from(body).toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
