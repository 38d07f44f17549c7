import { DrizzleQueryError, sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import { toJsonb } from '../db/storableJson.ts';
import { coerceError } from '../errors/coerceError.ts';
import type { CreateCheckoutIntentInput } from '../svc/client.ts';
import { UnknownOutcomeError } from '../svc/errors.ts';
import type { CreateCheckoutIntentResult } from '../svc/models/checkoutIntent.ts';
import { type ApplyResult, applyIntentSnapshot } from './applyIntentSnapshot.ts';

export interface CreatedIntent {
  created: CreateCheckoutIntentResult;
  /** The first read of the intent, applied; null when that read failed (firstReadError). */
  applied: ApplyResult | null;
  firstReadError: string | null;
}

/**
 * Creates a checkout intent at the service and starts tracking it. The call is recorded before
 * it is made: create has no idempotency key, so an outcome the client cannot know
 * (UnknownOutcomeError) stays recorded as `unknown` for a person, never retried blindly.
 */
export async function createIntent(
  deps: DomainContext,
  storeId: string,
  request: CreateCheckoutIntentInput,
): Promise<CreatedIntent> {
  const recorded = await deps.db.execute<{ id: string }>(sql`
    insert into checkout_intent_creations (store_id, order_id, request, outcome)
    values (${storeId}, ${request.order_id ?? null},
            ${toJsonb(request)}::jsonb, 'pending')
    returning id::text`);
  const creationId = recorded.rows[0]?.id;
  const settle = (outcome: string, intentId: string | null, error: string | null) =>
    deps.db.execute(sql`
      update checkout_intent_creations set outcome = ${outcome}, intent_id = ${intentId}, error = ${error}, updated_at = now()
      where id = ${creationId}::bigint`);
  let created: CreateCheckoutIntentResult;
  try {
    created = await deps.client(storeId).createCheckoutIntent(request);
  } catch (err) {
    await settle(err instanceof UnknownOutcomeError ? 'unknown' : 'failed', null, (err as Error).message);
    throw err;
  }
  const intentId = created.allsvc_checkout_intent_id;
  // The outcome and the tracking row commit together: if the first read below fails (or the
  // process dies), the poll sweeper still finds the intent (never polled) and polls it, so an
  // intent created here is never left untracked, and nobody re-runs the create for it.
  await recordCreated(deps, { creationId, storeId, intentId });
  try {
    const applied = await trackIntent(deps, storeId, intentId, 'create');
    return { created, applied, firstReadError: null };
  } catch (err) {
    deps.logger.warn({ intentId, err }, 'intent created; its first read failed, polling will catch up');
    return { created, applied: null, firstReadError: coerceError(err).message };
  }
}

/** Starts tracking an intent created elsewhere (`stablebooks intents track <id>`), or refreshes it. */
export async function trackIntent(
  deps: DomainContext,
  storeId: string,
  intentId: string,
  source: 'create' | 'track' = 'track',
): Promise<ApplyResult> {
  const client = deps.client(storeId);
  // Stamped before the request is sent: the answer is at least this recent, never newer (a read
  // that waited must not pass for newer than a poll recorded meanwhile).
  const observedAt = deps.clock.now();
  const intent = await client.getCheckoutIntent(intentId);
  return deps.db.transaction((tx) => applyIntentSnapshot(tx, deps, { storeId, intent, source, observedAt }));
}

/**
 * The service created the intent, but recording it (the creation's outcome and the tracking row)
 * failed on every attempt, e.g. the database was unreachable. The intent exists and can be paid:
 * creating it again would make a second one. Creations are keyed by a serial id, not by order_id
 * or any key of the request (the service has none for create), so a re-run of the create cannot
 * find this one: the intent must be tracked by its id, which only this error holds.
 */
export class IntentNotRecordedError extends Error {
  override name = 'IntentNotRecordedError';
  constructor(
    readonly intentId: string,
    readonly storeId: string,
    options: { cause: unknown },
  ) {
    super(
      `intent ${intentId} was created at the service but could not be recorded (${oneLine(databaseCause(options.cause))}); ` +
        `do not create it again: once the database answers, run: stablebooks intents track ${intentId} --store ${storeId}`,
      options,
    );
  }
}

/** Waits before the 2nd, 3rd and 4th attempt at recording a created intent: a blip, a failover. */
const RECORD_RETRY_DELAYS_MS = [200, 1_000, 3_000];

/**
 * Records `created` and starts tracking, retried (the statement is idempotent: the same update,
 * and an insert that does nothing once the row exists) unless the error is one a retry meets
 * again; then IntentNotRecordedError.
 */
async function recordCreated(
  deps: DomainContext,
  ids: { creationId: string | undefined; storeId: string; intentId: string },
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.db.execute(sql`
        with c as (
          update checkout_intent_creations set outcome = 'created', intent_id = ${ids.intentId}, error = null, updated_at = now()
          where id = ${ids.creationId}::bigint
        )
        insert into checkout_intents (id, store_id, tracked_via, tracked_at)
        values (${ids.intentId}, ${ids.storeId}, 'create', ${deps.clock.now().toISOString()}::timestamptz)
        on conflict (id) do nothing`);
      return;
    } catch (err) {
      const delayMs = RECORD_RETRY_DELAYS_MS[attempt];
      if (delayMs === undefined || !mayPassOnRetry(err)) {
        throw new IntentNotRecordedError(ids.intentId, ids.storeId, { cause: databaseCause(err) });
      }
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

/** False for SQLSTATE class 22 (data exception) or 23 (integrity violation): the same statement meets it again. */
function mayPassOnRetry(err: unknown): boolean {
  const cause = databaseCause(err);
  const code = cause instanceof Error && 'code' in cause ? cause.code : undefined;
  return !(typeof code === 'string' && /^2[23]/.test(code));
}

/** The database's own error behind drizzle's wrapper (whose message lists the query and its parameters). */
function databaseCause(err: unknown): unknown {
  return err instanceof DrizzleQueryError && err.cause !== undefined ? err.cause : err;
}

function oneLine(err: unknown): string {
  return coerceError(err).message.replace(/\s+/g, ' ').trim();
}
