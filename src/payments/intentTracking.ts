import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/** The polling state of one tracked intent, as the poller needs it. */
export interface TrackedIntent {
  id: string;
  storeId: string;
  status: number | null;
  settledBy: string | null;
  trackedAt: Date;
  pollCount: number;
}

export async function loadTrackedIntent(db: DbExecutor, id: string): Promise<TrackedIntent | undefined> {
  const { rows } = await db.execute<{
    id: string;
    store_id: string;
    status: number | null;
    settled_by: string | null;
    tracked_at: Date;
    poll_count: number;
  }>(
    sql`select id, store_id, status, settled_by, tracked_at, poll_count from checkout_intents where id = ${id}`,
  );
  const r = rows[0];
  return r
    ? {
        id: r.id,
        storeId: r.store_id,
        status: r.status,
        settledBy: r.settled_by,
        trackedAt: new Date(r.tracked_at),
        pollCount: r.poll_count,
      }
    : undefined;
}

/**
 * Intents to (re)start polling: never polled yet (tracked by the CLI or a library call, which
 * leave the first poll to the sweeper), or not polled for `staleMs` (their chain of poll jobs
 * broke). Job ids dedupe against a poll already queued. `now` is the clock the polls were stamped
 * on (last_polled_at is the injected clock's, which follows the service's in the demo), not the
 * database's.
 */
export async function staleTrackedIntents(
  db: DbExecutor,
  staleMs: number,
  now: Date,
  limit = 1000,
): Promise<Array<{ id: string; storeId: string; pollCount: number }>> {
  const { rows } = await db.execute<{ id: string; store_id: string; poll_count: number }>(sql`
    select id, store_id, poll_count from checkout_intents
    where settled_by is null
      and (last_polled_at is null
           or last_polled_at < ${new Date(now.getTime() - staleMs).toISOString()}::timestamptz)
    order by coalesce(last_polled_at, tracked_at)
    limit ${limit}`);
  return rows.map((r) => ({ id: r.id, storeId: r.store_id, pollCount: r.poll_count }));
}

/** Starts tracking an intent (the poll sweeper polls it first); an intent already tracked is left as it is. */
export async function trackFromWebhook(
  tx: DbExecutor,
  intentId: string,
  storeId: string,
  now: Date,
): Promise<void> {
  await tx.execute(sql`
    insert into checkout_intents (id, store_id, tracked_via, tracked_at)
    values (${intentId}, ${storeId}, 'webhook', ${now.toISOString()}::timestamptz)
    on conflict (id) do nothing`);
}
