import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { staleTrackedIntents } from '../../../src/payments/intentTracking.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * The poll sweeper (polls.sweep) finds intents whose chain of polls broke by `last_polled_at`,
 * which a poll stamps on the injected clock. A daemon following the service's clock (the demo,
 * the simulator) runs hours ahead of PostgreSQL's own now(): compared with now(), a poll stamped
 * there never looked stale, and a broken chain was never restarted.
 */
const { db } = await createMigratedDatabase('stalepolls');

describe('stale tracked intents', () => {
  it("behavior: staleness is measured on the clock the polls were stamped on, not the database's", async () => {
    const clockNow = new Date(Date.now() + 6 * 3_600_000);
    const polledAt = (minutesBefore: number) =>
      new Date(clockNow.getTime() - minutesBefore * 60_000).toISOString();
    await db.execute(sql`
      insert into checkout_intents (id, store_id, tracked_via, tracked_at, last_polled_at) values
        ('broken', 'st_a', 'cli', ${polledAt(60)}::timestamptz, ${polledAt(20)}::timestamptz),
        ('fresh', 'st_a', 'cli', ${polledAt(60)}::timestamptz, ${polledAt(1)}::timestamptz),
        ('never', 'st_a', 'cli', ${polledAt(60)}::timestamptz, null)`);
    const stale = await staleTrackedIntents(db, 15 * 60_000, clockNow);
    expect(stale.map((s) => s.id).sort()).toEqual(['broken', 'never']);
  });
});
