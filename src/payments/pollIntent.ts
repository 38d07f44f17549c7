import { sql } from 'drizzle-orm';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { storableExcerpt } from '../db/storableJson.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import { isPermanentSvcError } from '../svc/errors.ts';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import { applyIntentSnapshot } from './applyIntentSnapshot.ts';
import { loadTrackedIntent } from './intentTracking.ts';
import { nextPollDelayMs } from './pollSchedule.ts';

export interface PollOutcome {
  /** The status the service reported, or null when the intent is not polled any more. */
  status: number | null;
  changed: boolean;
  /** Delay before the next poll, or null: stop polling. */
  nextDelayMs: number | null;
  /**
   * The number of the next poll (its job is poll.<intent>.<nextPoll>): the intent's poll count
   * after this poll, n + 1 unless the chain has moved on meanwhile.
   */
  nextPoll: number;
}

/**
 * Poll number n of a tracked intent (its job is poll.<intent>.<n>): GET status (cheap); on a
 * change, GET the full intent and apply it through the same function as a webhook. Polling stops
 * once the intent is settled (a terminal status in the books). Errors from the service propagate
 * (a 40001 carries retryAfterMs for the caller to pause the key's queue).
 *
 * A read the service refuses (a non-retryable error: an intent it does not know, our credentials
 * refused, an answer the model rejects) opens an `intent_poll_refused` finding, then propagates:
 * the job fails and the poll sweeper tries again, as before, but a person now sees why the intent
 * is not followed. The next poll that reads the intent resolves the finding.
 *
 * A poll counts itself once, however often its job is retried: poll_count becomes
 * greatest(poll_count, n + 1). The next poll is number poll_count: n + 1, or the number of the
 * poll already scheduled when the chain moved on while this one failed and waited (a webhook or
 * the sweeper scheduled poll n + 1 meanwhile, and it ran), so every poll of the intent schedules
 * the same next job and two chains never form. Without n (a job from before n was carried), the
 * poll is taken for the next one, as the count says.
 */
export async function pollIntent(
  deps: DomainContext,
  intentId: string,
  options: { n?: number; scale?: number; random?: () => number } = {},
): Promise<PollOutcome> {
  const tracked = await loadTrackedIntent(deps.db, intentId);
  if (!tracked || tracked.settledBy)
    return {
      status: tracked?.status ?? null,
      changed: false,
      nextDelayMs: null,
      nextPoll: tracked?.pollCount ?? 0,
    };
  const n = options.n ?? tracked.pollCount;
  const client = deps.client(tracked.storeId);
  const polledAt = deps.clock.now();
  let status: number;
  try {
    status = await client.getCheckoutIntentStatus(intentId);
  } catch (err) {
    await recordRefusal(deps, tracked.storeId, intentId, err);
    throw err;
  }
  const counted = await deps.db.execute<{ poll_count: number }>(sql`
    update checkout_intents
    set last_polled_at = ${polledAt.toISOString()}::timestamptz, poll_count = greatest(poll_count, ${n + 1}::int)
    where id = ${intentId}
    returning poll_count`);
  const nextPoll = counted.rows[0]?.poll_count ?? n + 1;
  let changed = false;
  let settled = false;
  // A confirmed intent still polled is one rule 1 could not book yet: read it whole every time.
  if (status !== tracked.status || status === CheckoutStatus.CONFIRMED) {
    // Stamped before the GET is sent: the service may change the intent while the answer travels,
    // and this read must not look newer than a change another source recorded meanwhile.
    const observedAt = deps.clock.now();
    const intent = await client.getCheckoutIntent(intentId).catch(async (err: unknown) => {
      await recordRefusal(deps, tracked.storeId, intentId, err);
      throw err;
    });
    const result = await deps.db.transaction((tx) =>
      applyIntentSnapshot(tx, deps, { storeId: tracked.storeId, intent, source: 'poll', observedAt }),
    );
    changed = result.previousStatus !== result.status;
    settled = result.settled;
  }
  await resolveFinding(deps.db, POLL_REFUSED, { type: 'checkout_intent', id: intentId });
  const nextDelayMs = nextPollDelayMs({
    status,
    settled,
    trackedForMs: polledAt.getTime() - tracked.trackedAt.getTime(),
    random: options.random ?? Math.random,
    scale: options.scale,
  });
  return { status, changed, nextDelayMs, nextPoll };
}

const POLL_REFUSED = 'intent_poll_refused';

/**
 * Resolves the intent_poll_refused findings of intents settled since (by a webhook or the chain):
 * no poll runs for a settled intent, so the next successful poll that would resolve one never
 * comes, and there is nothing left to follow. One statement, for the poll sweeper.
 */
export async function resolveSettledPollRefusals(db: DbExecutor): Promise<number> {
  const { rowCount } = await db.execute(sql`
    update findings f set resolved_at = now()
    from checkout_intents c
    where f.kind = ${POLL_REFUSED} and f.resolved_at is null and f.ref_type = 'checkout_intent'
      and c.id = f.ref_id and c.settled_by is not null`);
  return rowCount ?? 0;
}

/** A refusal no retry fixes, as a finding on the intent (see pollIntent). */
async function recordRefusal(
  deps: DomainContext,
  storeId: string,
  intentId: string,
  err: unknown,
): Promise<void> {
  if (!isPermanentSvcError(err)) return;
  await recordFinding(
    deps.db,
    {
      kind: POLL_REFUSED,
      severity: 'warning',
      ref: { type: 'checkout_intent', id: intentId },
      details: {
        error: err.name,
        ...('code' in err && typeof err.code === 'number' ? { code: err.code } : {}),
        message: storableExcerpt(err.message),
        action:
          'check that this intent belongs to the store and that its API key works; the poll sweeper keeps trying',
      },
    },
    storeId,
  );
}
