import { sql } from 'drizzle-orm';
import type { ItemResult } from '../batching/microBatcher.ts';
import { executePrepared } from '../db/executePrepared.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { type CheckoutWebhookPayload, checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';
import {
  dataException,
  failUnprocessableWebhook,
  handleIntentReadError,
  type InboxOutcome,
  markCheckoutWebhooksProcessed,
  processInboxWebhook,
} from './processInboxWebhook.ts';

interface Ready {
  webhookId: string;
  storeId: string;
  payload: CheckoutWebhookPayload;
  intent: CheckoutIntent;
  /** Taken just before the intent's GET was sent (see processInboxWebhook). */
  observedAt: Date;
}

/**
 * Processes several stored webhooks with one read of the inbox and one transaction for all the
 * checkout webhooks among them (group commit on the worker side: a payment's begin, commit and
 * inbox round trips are shared by the batch). Each webhook gets exactly what
 * processInboxWebhook would do, and anything out of the plain path goes through
 * processInboxWebhook itself: claim-link events, bodies that do not parse, and every webhook of a
 * batch whose transaction failed (so one bad webhook fails only its own job). A read of an
 * intent that fails is handled as processInboxWebhook handles it, without asking again. A batch
 * that failed on a value PostgreSQL refuses (a poison webhook) is applied again at once, each
 * webhook under a savepoint with the intents already read, so the poison fails alone and the
 * others still commit together. Intents are applied in id order, so two batches lock them in one
 * order. Safe to run twice or beside another worker, like processInboxWebhook.
 */
export async function processInboxBatch(
  deps: PaymentsDeps,
  webhookIds: string[],
): Promise<Array<ItemResult<InboxOutcome>>> {
  const alone = (id: string): Promise<ItemResult<InboxOutcome>> => settle(processInboxWebhook(deps, id));
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
    const target = { webhookId, storeId: row.store_id, intentId: payload.all_svc_checkout_intent_id };
    fetching.push(
      (async (): Promise<Ready | undefined> => {
        try {
          // In the try: a store missing from STORES_FILE throws at once, and must fail only its
          // own webhook, not the batch.
          const client = deps.client(row.store_id);
          const observedAt = deps.clock.now();
          const intent = await client.getCheckoutIntent(payload.all_svc_checkout_intent_id);
          return { webhookId, storeId: row.store_id, payload, intent, observedAt };
        } catch (err) {
          // Handled as alone, without asking again: a refusal tracks the intent and goes back to
          // the job, an error no retry fixes fails the webhook, and anything else is the job's to
          // retry later (after the key's pause, for a 40001), not a second burst at a service
          // that struggles.
          results.set(webhookId, settle(handleIntentReadError(deps, target, err)));
          return undefined;
        }
      })(),
    );
  }
  const ready = (await Promise.all(fetching)).filter((r): r is Ready => r !== undefined);
  ready.sort(
    (a, b) =>
      compare(a.intent.all_svc_checkout_intent_id, b.intent.all_svc_checkout_intent_id) ||
      compare(a.webhookId, b.webhookId),
  );

  if (ready.length > 0) {
    let applied: Array<[string, InboxOutcome]> | undefined;
    try {
      applied = await applyBatch(deps, ready, false);
    } catch (err) {
      if (dataException(err)) {
        try {
          applied = await applyBatch(deps, ready, true);
        } catch (again) {
          deps.logger.warn({ err: again, size: ready.length }, 'webhook batch failed under savepoints');
        }
      }
      if (!applied) {
        deps.logger.warn(
          { err, size: ready.length },
          'webhook batch failed; processing its webhooks one by one',
        );
        for (const r of ready) results.set(r.webhookId, alone(r.webhookId));
      }
    }
    for (const [webhookId, value] of applied ?? [])
      results.set(webhookId, Promise.resolve({ ok: true, value }));
  }
  return Promise.all(webhookIds.map((id) => results.get(id) ?? alone(id)));
}

/**
 * One transaction for the batch. `isolated`: each webhook under a savepoint, and one that fails
 * on a value PostgreSQL refuses is failed with its finding and its intent tracked (in this
 * transaction) while the others go on. Each webhook then gets its own copy of the account cache,
 * dropped after it: an account a savepoint inserted reads back as another transaction's (its
 * xmin is the savepoint's, not the transaction's), so the shared cache would keep the id of a row
 * that a rollback, of the savepoint or of the whole transaction, undid.
 */
async function applyBatch(
  deps: PaymentsDeps,
  ready: Ready[],
  isolated: boolean,
): Promise<Array<[string, InboxOutcome]>> {
  return deps.db.transaction(async (tx) => {
    const out: Array<[string, InboxOutcome]> = [];
    for (const r of ready) {
      const observe = (on: typeof tx) =>
        applyIntentSnapshot(
          on,
          { chains: deps.chains, accounts: isolated ? new Map(deps.accounts) : deps.accounts },
          {
            storeId: r.storeId,
            intent: r.intent,
            source: 'webhook',
            observedAt: r.observedAt,
            webhook: r.payload,
          },
        );
      const outcome = (settled: boolean): InboxOutcome => ({
        kind: 'applied',
        intentId: r.intent.all_svc_checkout_intent_id,
        storeId: r.storeId,
        settled,
      });
      if (!isolated) {
        out.push([r.webhookId, outcome((await observe(tx)).settled)]);
        continue;
      }
      try {
        const result = await tx.transaction(async (sp) => {
          const res = await observe(sp);
          await markCheckoutWebhooksProcessed(sp, [r]);
          return res;
        });
        out.push([r.webhookId, outcome(result.settled)]);
      } catch (err) {
        const refused = dataException(err);
        if (!refused) throw err;
        const target = {
          webhookId: r.webhookId,
          storeId: r.storeId,
          intentId: r.payload.all_svc_checkout_intent_id,
        };
        out.push([r.webhookId, await failUnprocessableWebhook(tx, deps.clock.now(), target, refused)]);
      }
    }
    if (!isolated) await markCheckoutWebhooksProcessed(tx, ready);
    return out;
  });
}

function settle(work: Promise<InboxOutcome>): Promise<ItemResult<InboxOutcome>> {
  return work.then(
    (value) => ({ ok: true, value }),
    (err: unknown) => ({ ok: false, error: err instanceof Error ? err : new Error(String(err)) }),
  );
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
