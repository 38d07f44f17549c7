import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/** Inbox rows still waiting for processing after `olderThanMs`: the sweeper (re-)adds their jobs. */
export async function waitingInboxRows(db: DbExecutor, olderThanMs: number, limit = 5000): Promise<string[]> {
  const { rows } = await db.execute<{ webhook_id: string }>(sql`
    select webhook_id from webhook_inbox
    where status = 'received' and received_at < now() - ${olderThanMs} * interval '1 millisecond'
    order by received_at limit ${limit}`);
  return rows.map((r) => r.webhook_id);
}

/** Webhook nonces are kept only while a replay could still pass the timestamp check. */
export async function pruneWebhookNonces(db: DbExecutor): Promise<number> {
  const result = await db.execute(sql`delete from webhook_nonces where expires_at < now()`);
  return result.rowCount ?? 0;
}
