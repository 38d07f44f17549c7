import { sql } from 'drizzle-orm';
import { toJsonb } from '../db/storableJson.ts';
import type { CreateCheckoutIntentInput } from '../svc/client.ts';
import { UnknownOutcomeError } from '../svc/errors.ts';
import type { CreateCheckoutIntentResult } from '../svc/models/checkoutIntent.ts';
import { type ApplyResult, applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';

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
  deps: PaymentsDeps,
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
  await deps.db.execute(sql`
    with c as (
      update checkout_intent_creations set outcome = 'created', intent_id = ${intentId}, error = null, updated_at = now()
      where id = ${creationId}::bigint
    )
    insert into checkout_intents (id, store_id, tracked_via, tracked_at)
    values (${intentId}, ${storeId}, 'create', ${deps.clock.now().toISOString()}::timestamptz)
    on conflict (id) do nothing`);
  try {
    const applied = await trackIntent(deps, storeId, intentId, 'create');
    return { created, applied, firstReadError: null };
  } catch (err) {
    deps.logger.warn({ intentId, err }, 'intent created; its first read failed, polling will catch up');
    return { created, applied: null, firstReadError: err instanceof Error ? err.message : String(err) };
  }
}

/** Starts tracking an intent created elsewhere (`stablebooks intents track <id>`), or refreshes it. */
export async function trackIntent(
  deps: PaymentsDeps,
  storeId: string,
  intentId: string,
  source: 'create' | 'track' = 'track',
): Promise<ApplyResult> {
  const intent = await deps.client(storeId).getCheckoutIntent(intentId);
  return deps.db.transaction((tx) =>
    applyIntentSnapshot(tx, deps, { storeId, intent, source, observedAt: deps.clock.now() }),
  );
}
