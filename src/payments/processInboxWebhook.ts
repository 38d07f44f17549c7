import { sql } from 'drizzle-orm';
import pg from 'pg';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { storableExcerpt } from '../db/storableJson.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { applyClaimLinkWebhook, claimLinkEventOf } from '../payouts/applyClaimLinkWebhook.ts';
import { isPermanentSvcError, SvcApiError } from '../svc/errors.ts';
import type { CheckoutIntent } from '../svc/models/checkoutIntent.ts';
import { type CheckoutWebhookPayload, checkoutWebhookPayloadSchema } from '../svc/models/checkoutWebhook.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';

export type InboxOutcome =
  | { kind: 'already_done' }
  | { kind: 'applied'; intentId: string; storeId: string; settled: boolean }
  | { kind: 'claim_link_applied'; claimLinkId: string; storeId: string }
  /** Not applied yet, kept `received` for the inbox sweeper to try again (see REFUND_WEBHOOK_WAIT). */
  | { kind: 'waiting'; reason: string }
  | { kind: 'unusable'; reason: string };

/**
 * How long a claim-link webhook that names its link only by refund_tx_hash waits for the chain
 * side to see that refund: the row stays `received` (its error says why) and the inbox sweeper
 * processes it again every 30 s, until it is matched, or it was received longer than `ms` ago by
 * the database's clock, or it has had `attempts` attempts; then it fails with
 * `webhook_for_unknown_claim_link`, for a person (and `webhooks replay`). A replay of such a
 * failed row is past both bounds, so it applies if the refund is known by then and fails again at
 * once if not.
 */
export const REFUND_WEBHOOK_WAIT = { ms: 60 * 60_000, attempts: 150 } as const;

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
        const locked = await tx.execute<{ status: string; may_wait: boolean }>(sql`
          select status,
                 attempts + 1 < ${REFUND_WEBHOOK_WAIT.attempts}
                   and received_at > now() - ${REFUND_WEBHOOK_WAIT.ms} * interval '1 millisecond' as may_wait
          from webhook_inbox where webhook_id = ${webhookId} for update`);
        const lockedRow = locked.rows[0];
        if (lockedRow?.status !== 'received') return { kind: 'already_done' };
        const outcome = await applyClaimLinkWebhook(tx, deps, {
          storeId: row.store_id,
          webhookId,
          body: json,
          mayWait: lockedRow.may_wait,
        });
        if (outcome.kind === 'waiting') {
          // Stays `received`: the inbox sweeper adds its job again.
          await tx.execute(sql`
            update webhook_inbox set attempts = attempts + 1, error = ${storableExcerpt(outcome.reason)}
            where webhook_id = ${webhookId}`);
          deps.logger.info({ webhookId, reason: outcome.reason }, 'claim-link webhook waits for its refund');
          return outcome;
        }
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

/** The webhook being processed and the intent it names. */
export interface WebhookTarget {
  webhookId: string;
  storeId: string;
  intentId: string;
}

/**
 * The service refused to give a signed webhook's intent (one of REFUSAL_ATTEMPTS' codes). The
 * intent is tracked already; the job retries with BullMQ's backoff, up to `attempts` (or its own,
 * when fewer), and its last attempt fails the webhook with a finding (failRefusedWebhook).
 */
export class IntentReadRefusedError extends Error {
  override readonly name = 'IntentReadRefusedError';
  readonly retryable = true;
  constructor(
    readonly target: WebhookTarget,
    readonly code: number,
    /** The attempts a refusal with this code is worth (the job's own limit may be lower). */
    readonly attempts: number,
    /** The intent now tracked for polling, or null when its id is not of the spec's form. */
    readonly trackedIntent: string | null,
    options: { cause: SvcApiError },
  ) {
    super(options.cause.message, options);
  }
}

/**
 * Refusals of a signed webhook's intent that a later attempt may not meet, and how many attempts
 * each is worth. The signature proved the id authentic, so none is the webhook's fault. 30001 (the
 * IP allowlist, or permission on the resource), 20001 and 20002 (our credentials or clock) are
 * the store's access, fixed by a person in minutes: the job's whole budget (10 attempts, about
 * 8.5 min of backoff). 50001 for an intent the service itself signed a webhook about is its read
 * side lagging, or the intent gone for good: a few seconds of retries, then a finding.
 */
const REFUSAL_ATTEMPTS: ReadonlyMap<number, number> = new Map([
  [20001, Number.POSITIVE_INFINITY],
  [20002, Number.POSITIVE_INFINITY],
  [30001, Number.POSITIVE_INFINITY],
  [50001, 3],
]);

/**
 * What a failed read of a webhook's intent does. A refusal (REFUSAL_ATTEMPTS) tracks the intent,
 * counts the attempt on the row and throws IntentReadRefusedError for the job to retry. An error
 * no retry can fix (any other non-retryable SvcError: a 10001, an intent the model refuses)
 * fails the webhook with a finding and tracks its intent. Anything else is the job's to retry
 * (rethrown: 5xx, the network, a 40001 and the key's pause).
 */
export async function handleIntentReadError(
  deps: PaymentsDeps,
  target: WebhookTarget,
  err: unknown,
): Promise<InboxOutcome> {
  const attempts = err instanceof SvcApiError ? REFUSAL_ATTEMPTS.get(err.code) : undefined;
  if (err instanceof SvcApiError && attempts !== undefined) {
    const tracked = trackableIntentId(target.intentId);
    await deps.db.transaction(async (tx) => {
      if (tracked) await trackFromWebhook(tx, tracked, target.storeId, deps.clock.now());
      await tx.execute(sql`
        update webhook_inbox set attempts = attempts + 1, error = ${storableExcerpt(err.message)}
        where webhook_id = ${target.webhookId} and status = 'received'`);
    });
    throw new IntentReadRefusedError(target, err.code, attempts, tracked, { cause: err });
  }
  if (isPermanentSvcError(err)) {
    const refusal = {
      reason: storableExcerpt(err.message),
      details: { error: err.name, ...(err instanceof SvcApiError ? { code: err.code } : {}) },
    };
    return deps.db.transaction((tx) => failUnprocessableWebhook(tx, deps.clock.now(), target, refusal));
  }
  throw err;
}

/**
 * The last attempt of a refused read (IntentReadRefusedError): the webhook fails, with a finding
 * for a person. Its intent was tracked at the first refusal, so the poll sweeper books the payment
 * once the service answers; `webhooks replay` processes the webhook itself.
 */
export async function failRefusedWebhook(
  deps: PaymentsDeps,
  refused: IntentReadRefusedError,
  attemptsMade: number,
): Promise<InboxOutcome> {
  const { target } = refused;
  await deps.db.transaction(async (tx) => {
    const marked = await tx.execute(sql`
      update webhook_inbox set status = 'failed', processed_at = now(), error = ${storableExcerpt(refused.message)}
      where webhook_id = ${target.webhookId} and status = 'received'
      returning webhook_id`);
    if (marked.rows.length === 0) return;
    await recordFinding(
      tx,
      {
        kind: 'webhook_for_unknown_intent',
        severity: 'warning',
        ref: { type: 'webhook', id: target.webhookId },
        details: {
          intent_id: target.intentId,
          code: refused.code,
          attempts: attemptsMade,
          tracked_intent: refused.trackedIntent,
        },
      },
      target.storeId,
    );
  });
  return { kind: 'unusable', reason: refused.message };
}

/**
 * A webhook no retry can process (a value PostgreSQL refuses, an intent the service will not
 * give in any usable form): the row is failed with a critical finding and its intent tracked,
 * as for a body the model refuses, in the caller's transaction. Left `received`, it would be
 * re-added by the inbox sweeper every 30 s for ever, failing every batch it joined.
 */
export async function failUnprocessableWebhook(
  tx: DbExecutor,
  now: Date,
  target: WebhookTarget,
  refusal: { reason: string; details: Record<string, unknown> },
): Promise<InboxOutcome> {
  const tracked = trackableIntentId(target.intentId);
  const marked = await tx.execute(sql`
    update webhook_inbox set status = 'failed', processed_at = now(), attempts = attempts + 1, error = ${refusal.reason}
    where webhook_id = ${target.webhookId} and status = 'received'
    returning webhook_id`);
  if (marked.rows.length === 0) return { kind: 'already_done' };
  if (tracked) await trackFromWebhook(tx, tracked, target.storeId, now);
  await recordFinding(
    tx,
    {
      kind: 'webhook_unprocessable',
      severity: 'critical',
      ref: { type: 'webhook', id: target.webhookId },
      details: {
        intent_id: target.intentId,
        reason: refusal.reason,
        tracked_intent: tracked,
        ...refusal.details,
      },
    },
    target.storeId,
  );
  return { kind: 'unusable', reason: refusal.reason };
}

/**
 * A data exception (SQLSTATE class 22: a number out of range, text PostgreSQL cannot take): the
 * same values fail the same way on every retry. Its reason is PostgreSQL's own message, never
 * drizzle's, which lists the statement's parameters.
 */
export function dataException(
  err: unknown,
): { reason: string; details: Record<string, unknown> } | undefined {
  const dbErr =
    err instanceof pg.DatabaseError
      ? err
      : err instanceof Error && err.cause instanceof pg.DatabaseError
        ? err.cause
        : undefined;
  if (!dbErr?.code?.startsWith('22')) return undefined;
  return {
    reason: storableExcerpt(`database refused a value: ${dbErr.message}`),
    details: { sqlstate: dbErr.code },
  };
}

/** The intent id a webhook names, when it has the spec's form (an ObjectId), else null. */
function namedIntentId(json: unknown): string | null {
  if (typeof json !== 'object' || json === null) return null;
  return trackableIntentId((json as Record<string, unknown>).all_svc_checkout_intent_id);
}

/** An intent id of the spec's form (an ObjectId), which the poller can ask about; else null. */
function trackableIntentId(id: unknown): string | null {
  return typeof id === 'string' && /^[0-9a-f]{24}$/i.test(id) ? id : null;
}

/** Starts tracking an intent (the poll sweeper polls it first); an intent already tracked is left as it is. */
async function trackFromWebhook(tx: DbExecutor, intentId: string, storeId: string, now: Date): Promise<void> {
  await tx.execute(sql`
    insert into checkout_intents (id, store_id, tracked_via, tracked_at)
    values (${intentId}, ${storeId}, 'webhook', ${now.toISOString()}::timestamptz)
    on conflict (id) do nothing`);
}

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
