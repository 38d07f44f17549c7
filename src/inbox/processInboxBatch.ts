import { sql } from 'drizzle-orm';
import type { ItemResult } from '../batching/microBatcher.ts';
import type { DomainContext } from '../context/domainContext.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { coerceError } from '../errors/coerceError.ts';
import {
  applyIntentSnapshot,
  applyIntentSnapshots,
  type IntentObservation,
  lockIntents,
} from '../payments/applyIntentSnapshot.ts';
import { DeferredBookings } from '../payments/deferredBookings.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { type CheckoutWebhookPayload, checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import type { InboxOutcome } from './inboxOutcome.ts';
import { markCheckoutWebhooksProcessed } from './markWebhooksProcessed.ts';
import { processInboxWebhook } from './processInboxWebhook.ts';
import { dataException, failUnprocessableWebhook, handleIntentReadError } from './webhookFailures.ts';

/**
 * How long a batch waits for the rest of its intents once the first has arrived, before its
 * transaction applies those it has (ms); the others (stragglers) are applied as each arrives.
 * Counted from the first intent, not from the batch's start: before it there is nothing to
 * commit, so waiting costs nothing, and a service slow for every read (3 s each under load) still
 * answers a batch within a short spread of its first answer, so the batch commits whole instead of
 * one payment at a time exactly when the load is highest. 2 s is far above that spread for a
 * healthy service (tens of ms) and far below a read that hangs (the client's timeout is 15 s, up
 * to 3 attempts: ~46 s), which before held the batch's other 63 payments uncommitted.
 */
export const STRAGGLER_WAIT_MS = 2_000;

export interface InboxBatchOptions {
  /** See STRAGGLER_WAIT_MS (tests pass a short one). */
  stragglerWaitMs?: number;
}

interface Ready {
  webhookId: string;
  storeId: string;
  payload: CheckoutWebhookPayload;
  intent: CheckoutIntent;
  /** Taken just before the intent's GET was sent (see processInboxWebhook). */
  observedAt: Date;
}

/** A settled read of a webhook's intent: the intent, or the webhook's result without it. */
type Read = { ready: Ready } | { failed: Promise<ItemResult<InboxOutcome>> };

/** A webhook's intent being read; `read` never rejects. */
interface Fetch {
  webhookId: string;
  read: Promise<Read>;
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
 * order. The transaction does not wait for a read that hangs: it applies the intents arrived by
 * the deadline (STRAGGLER_WAIT_MS), and each straggler is applied in a transaction of its own once
 * its read settles (after the batch's, one at a time), never read twice. Safe to run twice or
 * beside another worker, like processInboxWebhook. Resolves once every webhook has its result,
 * the stragglers' included.
 */
export async function processInboxBatch(
  deps: DomainContext,
  webhookIds: string[],
  options: InboxBatchOptions = {},
): Promise<Array<ItemResult<InboxOutcome>>> {
  return Promise.all(await startInboxBatch(deps, webhookIds, options));
}

/**
 * processInboxBatch, resolving as soon as the batch's own transaction is done: one result per
 * webhook, in order, those of the stragglers still pending. For a caller that can release each
 * webhook's job on its own result (the micro-batcher hands a batch's results over all at once).
 */
export async function startInboxBatch(
  deps: DomainContext,
  webhookIds: string[],
  options: InboxBatchOptions = {},
): Promise<Array<Promise<ItemResult<InboxOutcome>>>> {
  const alone = (id: string): Promise<ItemResult<InboxOutcome>> => settle(processInboxWebhook(deps, id));
  const first = webhookIds[0];
  // Awaited: a batch of one is done when its webhook is (it holds its slot like any batch).
  if (webhookIds.length === 1 && first !== undefined) return [Promise.resolve(await alone(first))];

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
  const reads: Fetch[] = [];
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
    reads.push({
      webhookId,
      read: (async (): Promise<Read> => {
        try {
          // In the try: a store missing from STORES_FILE throws at once, and must fail only its
          // own webhook, not the batch.
          const client = deps.client(row.store_id);
          const observedAt = deps.clock.now();
          const intent = await client.getCheckoutIntent(payload.all_svc_checkout_intent_id);
          return { ready: { webhookId, storeId: row.store_id, payload, intent, observedAt } };
        } catch (err) {
          // Handled as alone, without asking again: a refusal tracks the intent and goes back to
          // the job, an error no retry fixes fails the webhook, and anything else is the job's to
          // retry later (after the key's pause, for a 40001), not a second burst at a service
          // that struggles.
          return { failed: settle(handleIntentReadError(deps, target, err)) };
        }
      })(),
    });
  }

  const { onTime, late } = await readsByDeadline(reads, options.stragglerWaitMs ?? STRAGGLER_WAIT_MS);
  const ready: Ready[] = [];
  for (const { webhookId, settled } of onTime) {
    if ('ready' in settled) ready.push(settled.ready);
    else results.set(webhookId, settled.failed);
  }
  ready.sort(
    (a, b) =>
      compare(a.intent.all_svc_checkout_intent_id, b.intent.all_svc_checkout_intent_id) ||
      compare(a.webhookId, b.webhookId),
  );
  const batch = applyReady(deps, ready, alone);
  // Each straggler once its read settles, in a transaction of its own after the batch's and after
  // the stragglers before it: this batch never holds two transactions at once (so never two on
  // one intent), and each webhook is applied by exactly one of them. A read that failed is
  // handled as on time (handleIntentReadError, already under way).
  let turn: Promise<unknown> = batch;
  for (const { webhookId, read } of late) {
    results.set(
      webhookId,
      read.then((settled) => {
        if ('failed' in settled) return settled.failed;
        const applied = turn.then(() => applyReady(deps, [settled.ready], alone));
        turn = applied.catch(() => undefined);
        return applied.then((out) => resultOf(out, webhookId), failure);
      }),
    );
  }
  for (const [webhookId, result] of await batch) results.set(webhookId, result);
  return webhookIds.map((id) => results.get(id) ?? alone(id));
}

/**
 * Waits for the reads until all have settled, or until `waitMs` after the first that gave an
 * intent (STRAGGLER_WAIT_MS); returns those settled by then and the rest, still running.
 */
async function readsByDeadline(
  reads: Fetch[],
  waitMs: number,
): Promise<{ onTime: Array<{ webhookId: string; settled: Read }>; late: Fetch[] }> {
  const settled = new Map<Fetch, Read>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let over = false;
  await new Promise<void>((resolve) => {
    let pending = reads.length;
    if (pending === 0) resolve();
    for (const fetch of reads)
      void fetch.read.then((read) => {
        if (over) return;
        settled.set(fetch, read);
        pending -= 1;
        if (pending === 0) resolve();
        else if ('ready' in read && timer === undefined) timer = setTimeout(resolve, waitMs);
      });
  });
  // From here on, a read that settles is a straggler: what is in `settled` now is the batch's.
  over = true;
  clearTimeout(timer);
  const onTime: Array<{ webhookId: string; settled: Read }> = [];
  const late: Fetch[] = [];
  for (const fetch of reads) {
    const read = settled.get(fetch);
    if (read) onTime.push({ webhookId: fetch.webhookId, settled: read });
    else late.push(fetch);
  }
  return { onTime, late };
}

/**
 * Applies intents already read (in id order) in one transaction (applyBatch); again under
 * savepoints when a value PostgreSQL refuses failed it, else one by one through
 * processInboxWebhook. Returns each webhook's result; does not reject.
 */
async function applyReady(
  deps: DomainContext,
  ready: Ready[],
  alone: (id: string) => Promise<ItemResult<InboxOutcome>>,
): Promise<Map<string, Promise<ItemResult<InboxOutcome>>>> {
  const out = new Map<string, Promise<ItemResult<InboxOutcome>>>();
  if (ready.length === 0) return out;
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
      for (const r of ready) out.set(r.webhookId, alone(r.webhookId));
    }
  }
  for (const [webhookId, value] of applied ?? []) out.set(webhookId, Promise.resolve({ ok: true, value }));
  return out;
}

function resultOf(
  out: Map<string, Promise<ItemResult<InboxOutcome>>>,
  webhookId: string,
): Promise<ItemResult<InboxOutcome>> {
  return (
    out.get(webhookId) ??
    Promise.resolve({ ok: false, error: new Error(`webhook ${webhookId} was not applied by its batch`) })
  );
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
  deps: DomainContext,
  ready: Ready[],
  isolated: boolean,
): Promise<Array<[string, InboxOutcome]>> {
  return deps.db.transaction(async (tx) => {
    // Every intent of the batch is locked first, in id order, before any booking may
    // create a ledger account: otherwise this batch can create an account (for its first intent)
    // that another transaction also creates after locking one of this batch's later intents, and
    // the two wait for each other (a deadlock the simulator's two workers found: seed 59).
    // Each row is made if missing, locked and read here for all (one round trip), and handed to
    // the intent's first observation; a second webhook of the same intent reads it again, after the
    // first wrote it.
    const locked = await lockIntents(
      tx,
      ready.map((r) => ({
        id: r.intent.all_svc_checkout_intent_id,
        storeId: r.storeId,
        source: 'webhook' as const,
        observedAt: r.observedAt,
      })),
    );
    const observation = (r: Ready): IntentObservation => ({
      storeId: r.storeId,
      intent: r.intent,
      source: 'webhook',
      observedAt: r.observedAt,
      webhook: r.payload,
    });
    const outcome = (r: Ready, settled: boolean): InboxOutcome => ({
      kind: 'applied',
      intentId: r.intent.all_svc_checkout_intent_id,
      storeId: r.storeId,
      settled,
    });
    if (!isolated) {
      // The intents' facts in one statement, their rule-1 entries and events in one each, written
      // once for the batch (DeferredBookings): a payment's own round trips are shared.
      const deferred = new DeferredBookings(deps.accounts);
      const applied = await applyIntentSnapshots(
        tx,
        { chains: deps.chains, stores: deps.stores, accounts: deps.accounts, deferred },
        ready.map((r) => {
          const id = r.intent.all_svc_checkout_intent_id;
          const row = locked.get(id);
          locked.delete(id);
          return { obs: observation(r), locked: row };
        }),
      );
      await deferred.flush(tx);
      await markCheckoutWebhooksProcessed(tx, ready);
      return ready.map((r, n): [string, InboxOutcome] => [
        r.webhookId,
        outcome(r, applied[n]?.settled ?? false),
      ]);
    }
    // Under savepoints nothing is shared between webhooks: a poison webhook's rollback must not
    // take another's facts or entry with it.
    const out: Array<[string, InboxOutcome]> = [];
    for (const r of ready) {
      const row = locked.get(r.intent.all_svc_checkout_intent_id);
      locked.delete(r.intent.all_svc_checkout_intent_id);
      try {
        const result = await tx.transaction(async (sp) => {
          const res = await applyIntentSnapshot(
            sp,
            { chains: deps.chains, stores: deps.stores, accounts: new Map(deps.accounts) },
            observation(r),
            row,
          );
          await markCheckoutWebhooksProcessed(sp, [r]);
          return res;
        });
        out.push([r.webhookId, outcome(r, result.settled)]);
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
    return out;
  });
}

function settle(work: Promise<InboxOutcome>): Promise<ItemResult<InboxOutcome>> {
  return work.then((value) => ({ ok: true, value }), failure);
}

function failure(err: unknown): ItemResult<InboxOutcome> {
  return { ok: false, error: coerceError(err) };
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
