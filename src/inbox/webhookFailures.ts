import { sql } from 'drizzle-orm';
import pg from 'pg';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { storableExcerpt } from '../db/storableJson.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import { trackFromWebhook } from '../payments/intentTracking.ts';
import { isPermanentSvcError, SvcApiError } from '../svc/errors.ts';
import type { InboxOutcome } from './inboxOutcome.ts';

/**
 * When a stored webhook cannot be processed: a read of its intent the service refuses (retried,
 * then a finding), or a webhook no retry can process (failed with a finding). Either way its
 * intent is tracked, so the poll sweeper books the payment once the service answers.
 */

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
export class IntentReadRefusedError extends StablebooksError {
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
  deps: DomainContext,
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
  deps: DomainContext,
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
export function namedIntentId(json: unknown): string | null {
  if (typeof json !== 'object' || json === null) return null;
  return trackableIntentId((json as Record<string, unknown>).all_svc_checkout_intent_id);
}

/** An intent id of the spec's form (an ObjectId), which the poller can ask about; else null. */
export function trackableIntentId(id: unknown): string | null {
  return typeof id === 'string' && /^[0-9a-f]{24}$/i.test(id) ? id : null;
}
