import { sql } from 'drizzle-orm';
import { post, signAlertBody } from '../alerts/notifiers.ts';
import type { Clock } from '../clock.ts';
import type { Db, DbExecutor } from '../db/database.ts';
import { storableExcerpt } from '../db/storableJson.ts';
import { coerceError } from '../errors/coerceError.ts';
import type { Logger } from '../logging/logger.ts';

/** How delivery retries and when it gives up (README, "Outbound events"). */
export interface DeliveryPolicy {
  /** Rows claimed (and POSTed in parallel) at a time. */
  batchSize: number;
  /** How long a claimed row is left to its claimer: past it, another run delivers it again. */
  leaseMs: number;
  /** The first retry's delay; doubles each attempt up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** An event not delivered this long after it was recorded is given up (given_up_at). */
  giveUpAfterMs: number;
  /** A run stops claiming after this long (the next run goes on). */
  runBudgetMs: number;
}

export const DEFAULT_DELIVERY: DeliveryPolicy = {
  batchSize: 16,
  // Longer than a POST may take (the notifiers' 10 s timeout) and the marking after it.
  leaseMs: 30_000,
  baseDelayMs: 5_000,
  maxDelayMs: 60 * 60_000,
  giveUpAfterMs: 3 * 24 * 60 * 60_000,
  runBudgetMs: 20_000,
};

export type DeliveryOutcome = 'delivered' | 'failed' | 'given_up';

export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET. */
  url: string;
  secret: string;
  policy?: Partial<DeliveryPolicy>;
  /** Told of each attempt's outcome (the metric). */
  onOutcome?: (outcome: DeliveryOutcome) => void;
}

/** An outbox row as delivery reads it. */
type DueEvent = {
  id: string;
  event_id: string;
  type: string;
  occurred_at: string;
  payload: Record<string, unknown>;
  attempts: number;
  given_up: boolean;
};

/**
 * The body of an event: the same bytes at every attempt (the timestamp and signature headers are
 * per attempt), so a receiver that dedupes by X-Stablebooks-Event-Id sees one event.
 */
export function eventBody(row: Pick<DueEvent, 'event_id' | 'type' | 'occurred_at' | 'payload'>): string {
  return JSON.stringify({
    id: row.event_id,
    type: row.type,
    occurred_at: row.occurred_at,
    data: row.payload,
  });
}

/** The delay before retry number `attempts` (1 after the first failure): doubling, capped. */
export function retryDelayMs(attempts: number, policy: DeliveryPolicy = DEFAULT_DELIVERY): number {
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, Math.min(30, attempts - 1)));
}

/**
 * One delivery run: claims due outbox rows (FOR UPDATE SKIP LOCKED, leased for `leaseMs` in a short
 * transaction, so two runs never POST the same row at once and no connection waits on HTTP), POSTs
 * each as JSON signed like the alert webhook (HMAC-SHA256 over `<timestamp>.<body>`), and marks it
 * delivered on a 2xx, else schedules its retry with exponential backoff; an event still undelivered
 * `giveUpAfterMs` after it was recorded is given up. At least once: a crash between the POST and the
 * mark leaves the row leased, and once the lease ends it is sent again, same id, same body.
 */
export async function deliverEvents(
  deps: DeliveryDeps,
): Promise<{ delivered: number; failed: number; givenUp: number }> {
  const policy = { ...DEFAULT_DELIVERY, ...deps.policy };
  const totals = { delivered: 0, failed: 0, givenUp: 0 };
  const started = performance.now();
  while (performance.now() - started < policy.runBudgetMs) {
    const due = await claimDue(deps.db, policy);
    if (due.length === 0) break;
    await Promise.all(
      due.map(async (row) => {
        const outcome = await deliverOne(deps, policy, row);
        deps.onOutcome?.(outcome);
        if (outcome === 'delivered') totals.delivered += 1;
        else if (outcome === 'failed') totals.failed += 1;
        else totals.givenUp += 1;
      }),
    );
  }
  return totals;
}

/** Due rows, oldest first, leased to this run in one statement. */
async function claimDue(db: DbExecutor, policy: DeliveryPolicy): Promise<DueEvent[]> {
  const { rows } = await db.execute<DueEvent>(sql`
    with due as (
      select id from event_outbox
      where delivered_at is null and given_up_at is null and next_attempt_at <= now()
      order by next_attempt_at, id
      limit ${policy.batchSize}
      for update skip locked)
    update event_outbox o
    set next_attempt_at = now() + make_interval(secs => ${policy.leaseMs / 1000})
    from due where o.id = due.id
    returning o.id::text, o.event_id, o.type,
      to_char(o.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at,
      o.payload, o.attempts,
      o.recorded_at < now() - make_interval(secs => ${policy.giveUpAfterMs / 1000}) as given_up`);
  return rows.sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

async function deliverOne(
  deps: DeliveryDeps,
  policy: DeliveryPolicy,
  row: DueEvent,
): Promise<DeliveryOutcome> {
  const body = eventBody(row);
  const timestamp = Math.floor(deps.clock.now().getTime() / 1000);
  try {
    await post(deps.url, body, {
      'X-Stablebooks-Event-Id': row.event_id,
      'X-Stablebooks-Event-Type': row.type,
      'X-Stablebooks-Timestamp': String(timestamp),
      'X-Stablebooks-Signature': signAlertBody(deps.secret, timestamp, body),
    });
  } catch (err) {
    const error = storableExcerpt(coerceError(err).message);
    const attempts = row.attempts + 1;
    if (row.given_up) {
      await deps.db.execute(sql`
        update event_outbox set attempts = ${attempts}, last_error = ${error}, given_up_at = now()
        where id = ${row.id}::bigint and delivered_at is null`);
      deps.logger.warn(
        { eventId: row.event_id, type: row.type, attempts, error },
        'outbound event given up: not delivered within the delivery window',
      );
      return 'given_up';
    }
    const delayMs = retryDelayMs(attempts, policy);
    await deps.db.execute(sql`
      update event_outbox set attempts = ${attempts}, last_error = ${error},
        next_attempt_at = now() + make_interval(secs => ${delayMs / 1000})
      where id = ${row.id}::bigint and delivered_at is null`);
    deps.logger.info(
      { eventId: row.event_id, attempts, delayMs, error },
      'outbound event not delivered; retrying',
    );
    return 'failed';
  }
  await deps.db.execute(sql`
    update event_outbox set delivered_at = now(), attempts = ${row.attempts + 1}, last_error = null
    where id = ${row.id}::bigint and delivered_at is null`);
  return 'delivered';
}

/**
 * Deletes old outbox rows (the maintenance sweep `events.prune`): delivered or given up and
 * recorded more than `retentionMs` ago; with delivery off (no EVENTS_WEBHOOK_URL) every row that
 * old, since nothing will send it. At most `limit` rows a run, so a large backlog goes in steps.
 */
export async function pruneEvents(
  db: DbExecutor,
  options: { retentionMs: number; deliveryOn: boolean; limit?: number },
): Promise<number> {
  const result = await db.execute(sql`
    delete from event_outbox where id in (
      select id from event_outbox
      where recorded_at < now() - make_interval(secs => ${options.retentionMs / 1000})
        and (${!options.deliveryOn}::boolean or delivered_at is not null or given_up_at is not null)
      order by recorded_at
      limit ${options.limit ?? 10_000})`);
  return result.rowCount ?? 0;
}
