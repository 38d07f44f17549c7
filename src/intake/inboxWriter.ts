import { sql } from 'drizzle-orm';
import pg from 'pg';
import { createMicroBatcher, type ItemResult } from '../batching/microBatcher.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { coerceError } from '../errors/coerceError.ts';
import type { Logger } from '../logging/logger.ts';

/**
 * The batching writer of verified webhooks (group commit). The intake is bounded by PostgreSQL's
 * commit (WAL flush) rate when every webhook commits alone, so the webhooks that arrive within
 * one event-loop turn are stored by ONE statement in its own implicit transaction: the nonce
 * claims and the inbox rows of the whole batch commit together, and each caller is answered only
 * after that commit. The statement's text is constant (array parameters and unnest), so its cost
 * to plan does not grow with the batch.
 *
 * The batching itself is src/batching/microBatcher.ts: at most `maxInFlight` batch statements run
 * at once, and webhooks arriving meanwhile form the next batch, so batches grow under load instead
 * of connections piling up.
 */

export interface InboxItem {
  storeId: string;
  endpoint: string;
  webhookId: string;
  nonceKey: string;
  nonceTtlSeconds: number;
  /** The request headers as JSON text (stored as jsonb). */
  headersJson: string;
  /** The exact bytes received. */
  body: Buffer;
  /** Whether the body parsed as JSON: if not, the webhook is stored as rejected, for audit. */
  json: boolean;
}

/**
 * stored: this item's row was inserted (as 'rejected' when json is false); duplicate: its nonce
 * was claimed but a row with its webhook_id already existed (or an earlier item of the same batch
 * took it); nonce_reused: the nonce was already claimed and has not expired, nothing stored.
 */
export type StoreOutcome = 'stored' | 'duplicate' | 'nonce_reused';

export interface InboxWriterOptions {
  db: DbExecutor;
  /** Adds the processing jobs of webhooks just stored as 'received'; called once per batch. */
  enqueueMany(webhookIds: string[]): Promise<void>;
  logger: Logger;
  maxBatch?: number;
  maxInFlight?: number;
  /**
   * Called once per batch sent to the database (not for the one-by-one retries), when it is done:
   * its item count and how long the statement (with its commit) and the enqueue took (null when
   * the batch stored nothing to enqueue).
   */
  onBatch?(batch: { size: number; storeSeconds: number; enqueueSeconds: number | null }): void;
}

export interface InboxWriter {
  /** Resolves once the item's batch has committed and its jobs were offered to the queue. */
  store(item: InboxItem): Promise<StoreOutcome>;
  /** Items accepted and not yet stored (or failed): what the intake holds in memory. */
  waiting(): number;
  /** Refuses new items and resolves once every accepted item is settled (for shutdown). */
  close(): Promise<void>;
}

interface Pending {
  item: InboxItem;
  outcome?: StoreOutcome;
  error?: Error;
}

interface BatchResult {
  claimed: string[];
  inserted: string[];
}

export function createInboxWriter(options: InboxWriterOptions): InboxWriter {
  const batcher = createMicroBatcher<InboxItem, StoreOutcome>({
    run: (items) => storeBatch(options, items),
    maxBatch: options.maxBatch ?? 500,
    maxInFlight: options.maxInFlight ?? 4,
  });
  return {
    store: (item) => batcher.add(item),
    waiting: () => batcher.pending(),
    close: () => batcher.close(),
  };
}

/** Stores one batch; never throws: every failure is the result of the items it concerns. */
async function storeBatch(
  options: InboxWriterOptions,
  items: InboxItem[],
): Promise<Array<ItemResult<StoreOutcome>>> {
  const { db, enqueueMany, logger, onBatch } = options;
  const batch: Pending[] = items.map((item) => ({ item }));
  // ON CONFLICT DO UPDATE cannot touch the same nonce row twice in one statement, and a nonce
  // repeated within a batch is a replay anyway: only its first item goes to the database.
  const seenNonces = new Set<string>();
  const toWrite: Pending[] = [];
  for (const p of batch) {
    if (seenNonces.has(p.item.nonceKey)) p.outcome = 'nonce_reused';
    else {
      seenNonces.add(p.item.nonceKey);
      toWrite.push(p);
    }
  }
  const toEnqueue: string[] = [];
  const started = performance.now();
  if (toWrite.length > 0) {
    try {
      applyResult(toWrite, await writeBatch(db, toWrite), toEnqueue);
    } catch (err) {
      if (toWrite.length > 1 && refusedByDatabase(err)) {
        // The server refused the statement, so nothing of it committed: store each item alone,
        // so that one value the database refuses fails only its own webhook. In order, so the
        // first of two items with one webhook_id is still the one stored.
        logger.warn(
          { size: toWrite.length, code: databaseErrorCode(err) },
          'inbox batch refused; storing its webhooks one by one',
        );
        for (const p of toWrite) {
          try {
            applyResult([p], await writeBatch(db, [p]), toEnqueue);
          } catch (itemErr) {
            p.error = storeError(itemErr);
            logger.error(
              { webhookId: p.item.webhookId, code: databaseErrorCode(itemErr) },
              'could not store webhook',
            );
          }
        }
      } else {
        // Not a refusal (e.g. the connection dropped): whether it committed is unknown, so no
        // retry; the sender retries and the webhook_id makes that idempotent.
        const error = storeError(err);
        for (const p of toWrite) p.error = error;
        logger.error({ size: toWrite.length, code: databaseErrorCode(err) }, 'could not store webhooks');
      }
    }
  }
  const stored = performance.now();
  if (toEnqueue.length > 0) {
    try {
      await enqueueMany(toEnqueue);
    } catch (err) {
      // Stored is what counts: the sweeper enqueues inbox rows that have no job.
      logger.warn(
        { err, count: toEnqueue.length },
        'webhooks stored but not enqueued; the sweeper will enqueue them',
      );
    }
  }
  if (toWrite.length > 0) {
    onBatch?.({
      size: toWrite.length,
      storeSeconds: (stored - started) / 1000,
      enqueueSeconds: toEnqueue.length > 0 ? (performance.now() - stored) / 1000 : null,
    });
  }
  return batch.map((p) =>
    p.error ? { ok: false, error: p.error } : { ok: true, value: p.outcome ?? 'duplicate' },
  );
}

/**
 * Maps the statement's answer onto the items, in batch order: an item whose nonce was not
 * claimed is a replay; of the items with one webhook_id, the first with a claimed nonce is the
 * one the statement inserted (distinct on ... order by ord), the others are duplicates.
 */
function applyResult(items: Pending[], result: BatchResult, toEnqueue: string[]): void {
  const claimed = new Set(result.claimed);
  const inserted = new Set(result.inserted);
  for (const p of items) {
    if (!claimed.has(p.item.nonceKey)) p.outcome = 'nonce_reused';
    else if (inserted.delete(p.item.webhookId)) {
      p.outcome = 'stored';
      if (p.item.json) toEnqueue.push(p.item.webhookId);
    } else p.outcome = 'duplicate';
  }
}

async function writeBatch(db: DbExecutor, items: Pending[]): Promise<BatchResult> {
  const col = <T>(pick: (item: InboxItem) => T): T[] => items.map((p) => pick(p.item));
  // Nonces are inserted in sorted order and inbox rows in webhook_id order, so concurrent
  // batches take their unique-index locks in one order and do not deadlock each other.
  const { rows } = await executePrepared<{ claimed: string[]; inserted: string[] }>(
    db,
    sql`
    with input as (
      select * from unnest(
        ${sql.param(col((i) => i.webhookId))}::text[],
        ${sql.param(col((i) => i.storeId))}::text[],
        ${sql.param(col((i) => i.endpoint))}::text[],
        ${sql.param(col((i) => (i.json ? 'received' : 'rejected')))}::text[],
        ${sql.param(col((i) => i.headersJson))}::text[],
        ${sql.param(col((i) => i.body))}::bytea[],
        ${sql.param(col((i) => (i.json ? null : 'body is not valid JSON')))}::text[],
        ${sql.param(col((i) => i.nonceKey))}::text[],
        ${sql.param(col((i) => i.nonceTtlSeconds))}::float8[]
      ) with ordinality as t(webhook_id, store_id, endpoint, status, headers, body, error, nonce, ttl, ord)
    ), n as (
      insert into webhook_nonces (nonce, expires_at)
      select nonce, now() + ttl * interval '1 second' from input order by nonce
      on conflict (nonce) do update set expires_at = excluded.expires_at where webhook_nonces.expires_at < now()
      returning nonce
    ), i as (
      insert into webhook_inbox (webhook_id, store_id, endpoint, status, headers, body, error)
      select distinct on (webhook_id) webhook_id, store_id, endpoint, status, headers::jsonb, body, error
      from input
      where nonce in (select nonce from n)
      order by webhook_id, ord
      on conflict (webhook_id) do nothing
      returning webhook_id
    )
    select (select coalesce(array_agg(nonce), '{}') from n) as claimed,
           (select coalesce(array_agg(webhook_id), '{}') from i) as inserted`,
  );
  const row = rows[0];
  return { claimed: row?.claimed ?? [], inserted: row?.inserted ?? [] };
}

/** The server's error for the statement, if it answered one (drizzle wraps it as the cause). */
function databaseError(err: unknown): pg.DatabaseError | undefined {
  if (err instanceof pg.DatabaseError) return err;
  if (err instanceof Error && err.cause instanceof pg.DatabaseError) return err.cause;
  return undefined;
}

/** An error the server answered means the statement's implicit transaction did not commit. */
function refusedByDatabase(err: unknown): boolean {
  return databaseError(err) !== undefined;
}

function databaseErrorCode(err: unknown): string | undefined {
  return databaseError(err)?.code;
}

/**
 * The error an item's promise rejects with. Not drizzle's own: its message lists the statement's
 * parameters, the stored headers among them, and those carry the webhook signatures.
 */
function storeError(err: unknown): Error {
  const dbErr = databaseError(err);
  if (dbErr) return new Error(`could not store webhook: ${dbErr.message} (${dbErr.code})`);
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  return new Error(`could not store webhook: ${coerceError(cause).message}`);
}
