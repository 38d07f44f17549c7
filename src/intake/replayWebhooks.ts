import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';

/**
 * Replay: an operator has stored webhooks processed again, e.g. after fixing what made them
 * `failed` (a body the model would not parse, an intent the service did not know). Replaying puts
 * the inbox row back to `received`, the one status processing acts on; the caller then makes sure
 * the row has a job. Processing is idempotent, so replaying a `processed` row books nothing twice.
 * A `rejected` row (valid signature, body not JSON) is kept for audit only: nothing can process it.
 */
export type ReplaySelection =
  | { kind: 'ids'; webhookIds: string[] }
  | { kind: 'failed'; storeId?: string; since?: Date; limit: number };

export interface ReplayedWebhook {
  webhookId: string;
  storeId: string;
  endpoint: string;
  /** The status before the replay; `received` rows stay as they are and only get a job. */
  previousStatus: 'received' | 'processed' | 'failed';
  receivedAt: Date;
  attempts: number;
  /** Why the last processing failed, when it did (kept until processing succeeds). */
  lastError: string | null;
}

export type ReplayOutcome =
  | { kind: 'replayed'; webhooks: ReplayedWebhook[]; more: boolean }
  /** Nothing was changed: some named webhooks do not exist or cannot be replayed. */
  | { kind: 'refused'; unknown: string[]; rejected: string[] };

/**
 * Selects the webhooks to replay and, unless `dryRun`, resets the failed and processed ones to
 * `received`, in one transaction: either every named webhook is replayable and reset, or nothing
 * changes. Rows are locked while they are checked, so a concurrent replay waits for this one.
 */
export async function replayWebhooks(
  db: Db,
  selection: ReplaySelection,
  options: { dryRun?: boolean } = {},
): Promise<ReplayOutcome> {
  return db.transaction(async (tx) => {
    const where =
      selection.kind === 'ids'
        ? sql`webhook_id = any(${sql.param(selection.webhookIds)}::text[])`
        : sql`status = 'failed'
            and (${selection.storeId ?? null}::text is null or store_id = ${selection.storeId ?? null})
            and (${selection.since?.toISOString() ?? null}::timestamptz is null
                 or received_at >= ${selection.since?.toISOString() ?? null}::timestamptz)`;
    // One more than the limit tells the operator that more are waiting.
    const limit = selection.kind === 'ids' ? sql`` : sql`limit ${selection.limit + 1}`;
    const { rows } = await tx.execute<{
      webhook_id: string;
      store_id: string;
      endpoint: string;
      status: 'received' | 'rejected' | 'processed' | 'failed';
      received_at: Date | string;
      attempts: number;
      error: string | null;
    }>(sql`
      select webhook_id, store_id, endpoint, status, received_at, attempts, error
      from webhook_inbox where ${where}
      order by received_at, webhook_id ${limit}
      for update`);

    if (selection.kind === 'ids') {
      const found = new Set(rows.map((r) => r.webhook_id));
      const unknown = [...new Set(selection.webhookIds)].filter((id) => !found.has(id));
      const rejected = rows.filter((r) => r.status === 'rejected').map((r) => r.webhook_id);
      if (unknown.length > 0 || rejected.length > 0) return { kind: 'refused', unknown, rejected };
    }
    const more = selection.kind === 'failed' && rows.length > selection.limit;
    const webhooks = rows.slice(0, selection.kind === 'failed' ? selection.limit : undefined).map(
      (r): ReplayedWebhook => ({
        webhookId: r.webhook_id,
        storeId: r.store_id,
        endpoint: r.endpoint,
        previousStatus: r.status as ReplayedWebhook['previousStatus'],
        receivedAt: new Date(r.received_at),
        attempts: Number(r.attempts),
        lastError: r.error,
      }),
    );
    const reset = webhooks.filter((w) => w.previousStatus !== 'received').map((w) => w.webhookId);
    if (!options.dryRun && reset.length > 0) {
      // `error` stays: it says why the last attempt failed until a new one succeeds (which clears it).
      await tx.execute(sql`
        update webhook_inbox set status = 'received', processed_at = null
        where webhook_id = any(${sql.param(reset)}::text[]) and status in ('failed', 'processed')`);
    }
    return { kind: 'replayed', webhooks, more };
  });
}
