import { sql } from 'drizzle-orm';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import { loadTrackedIntent } from './intentTracking.ts';
import type { PaymentsDeps } from './paymentsDeps.ts';
import { nextPollDelayMs } from './pollSchedule.ts';

export interface PollOutcome {
  /** The status the service reported, or null when the intent is not polled any more. */
  status: number | null;
  changed: boolean;
  /** Delay before the next poll, or null: stop polling. */
  nextDelayMs: number | null;
}

/**
 * One poll of a tracked intent: GET status (cheap); on a change, GET the full intent and apply it
 * through the same function as a webhook. Polling stops once the intent is settled (a terminal
 * status in the books). Errors from the service propagate (a 40001 carries
 * retryAfterMs for the caller to pause the key's queue).
 */
export async function pollIntent(
  deps: PaymentsDeps,
  intentId: string,
  options: { scale?: number; random?: () => number } = {},
): Promise<PollOutcome> {
  const tracked = await loadTrackedIntent(deps.db, intentId);
  if (!tracked || tracked.settledBy)
    return { status: tracked?.status ?? null, changed: false, nextDelayMs: null };
  const client = deps.client(tracked.storeId);
  const status = await client.getCheckoutIntentStatus(intentId);
  const now = deps.clock.now();
  await deps.db.execute(sql`
    update checkout_intents set last_polled_at = ${now.toISOString()}::timestamptz, poll_count = poll_count + 1
    where id = ${intentId}`);
  let changed = false;
  let settled = false;
  // A confirmed intent still polled is one rule 1 could not book yet: read it whole every time.
  if (status !== tracked.status || status === CheckoutStatus.CONFIRMED) {
    const intent = await client.getCheckoutIntent(intentId);
    const result = await deps.db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, { storeId: tracked.storeId, intent, source: 'poll', observedAt: now }),
    );
    changed = result.previousStatus !== result.status;
    settled = result.settled;
  }
  const nextDelayMs = nextPollDelayMs({
    status,
    settled,
    trackedForMs: now.getTime() - tracked.trackedAt.getTime(),
    random: options.random ?? Math.random,
    scale: options.scale,
  });
  return { status, changed, nextDelayMs };
}
