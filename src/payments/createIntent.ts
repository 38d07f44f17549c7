import { sql } from 'drizzle-orm';
import type { CreateCheckoutIntentInput } from '../svc/client.ts';
import { UnknownOutcomeError } from '../svc/errors.ts';
import type { CreateCheckoutIntentResult } from '../svc/models/checkoutIntent.ts';
import { type ApplyResult, applyIntentSnapshot } from './applyIntentSnapshot.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';

/**
 * Creates a checkout intent at the service and starts tracking it. The call is recorded before
 * it is made: create has no idempotency key, so an outcome the client cannot know
 * (UnknownOutcomeError) stays recorded as `unknown` for a person, never retried blindly.
 */
export async function createIntent(
  deps: PaymentsDeps,
  storeId: string,
  request: CreateCheckoutIntentInput,
): Promise<{ created: CreateCheckoutIntentResult; applied: ApplyResult }> {
  const recorded = await deps.db.execute<{ id: string }>(sql`
    insert into checkout_intent_creations (store_id, order_id, request, outcome)
    values (${storeId}, ${request.order_id ?? null},
            ${JSON.stringify(request, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}::jsonb, 'pending')
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
  await settle('created', created.allsvc_checkout_intent_id, null);
  const applied = await trackIntent(deps, storeId, created.allsvc_checkout_intent_id, 'create');
  return { created, applied };
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
