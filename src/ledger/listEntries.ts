import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

export interface ListedEntry {
  id: bigint;
  idempotencyKey: string;
  kind: string;
  occurredAt: Date;
  recordedAt: Date;
  storeId: string;
  ref: { type: string; id: string };
  reversesEntryId: bigint | null;
  memo: string | null;
  metadata: Record<string, unknown>;
  postings: Array<{ accountCode: string; asset: string; symbol: string; decimals: number; amount: bigint }>;
}

export interface EntriesFilter {
  refId?: string;
  kind?: string;
  storeId?: string;
  /** Occurred at or after this time. */
  from?: Date;
  /** Occurred before this time. */
  to?: Date;
  /** Only entries with an id below this one: the next page after an entry (keyset pagination). */
  beforeId?: bigint;
  limit?: number;
}

/**
 * Entries newest first (by id), with their postings, filtered by ref id, kind, store, the period
 * they occurred in, in one query. Pages follow each other by `beforeId` (the last id of a page):
 * entries are never changed or deleted, so a page never shifts under the reader.
 */
export async function listEntries(db: DbExecutor, filter: EntriesFilter = {}): Promise<ListedEntry[]> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), 10_000);
  const { rows } = await db.execute<{
    id: string;
    idempotency_key: string;
    kind: string;
    occurred_at: Date;
    recorded_at: Date;
    store_id: string;
    ref_type: string;
    ref_id: string;
    reverses_entry_id: string | null;
    memo: string | null;
    metadata: Record<string, unknown>;
    postings: Array<{ code: string; asset: string; symbol: string; decimals: number; amount: string }>;
  }>(sql`
    select e.id::text, e.idempotency_key, e.kind, e.occurred_at, e.recorded_at, e.store_id, e.ref_type, e.ref_id,
           e.reverses_entry_id::text, e.memo, e.metadata,
           (select json_agg(json_build_object('code', a.code, 'asset', p.asset, 'symbol', a.symbol,
                                              'decimals', a.decimals, 'amount', p.amount::text) order by p.id)
            from ledger_postings p join ledger_accounts a on a.id = p.account_id
            where p.entry_id = e.id) as postings
    from ledger_entries e
    where (${filter.refId ?? null}::text is null or e.ref_id = ${filter.refId ?? null})
      and (${filter.kind ?? null}::text is null or e.kind = ${filter.kind ?? null})
      and (${filter.storeId ?? null}::text is null or e.store_id = ${filter.storeId ?? null})
      and (${filter.from?.toISOString() ?? null}::timestamptz is null or e.occurred_at >= ${filter.from?.toISOString() ?? null}::timestamptz)
      and (${filter.to?.toISOString() ?? null}::timestamptz is null or e.occurred_at < ${filter.to?.toISOString() ?? null}::timestamptz)
      and (${filter.beforeId?.toString() ?? null}::bigint is null or e.id < ${filter.beforeId?.toString() ?? null}::bigint)
    order by e.id desc
    limit ${limit}`);
  return rows.map((r) => ({
    id: BigInt(r.id),
    idempotencyKey: r.idempotency_key,
    kind: r.kind,
    occurredAt: new Date(r.occurred_at),
    recordedAt: new Date(r.recorded_at),
    storeId: r.store_id,
    ref: { type: r.ref_type, id: r.ref_id },
    reversesEntryId: r.reverses_entry_id === null ? null : BigInt(r.reverses_entry_id),
    memo: r.memo,
    metadata: r.metadata,
    postings: (r.postings ?? []).map((p) => ({
      accountCode: p.code,
      asset: p.asset,
      symbol: p.symbol,
      decimals: p.decimals,
      amount: BigInt(p.amount),
    })),
  }));
}

/** An entry as it leaves the process (JSON): ids and amounts (base units) as strings. */
export interface EntryView {
  id: string;
  kind: string;
  occurred_at: string;
  recorded_at: string;
  store_id: string;
  ref_type: string;
  ref_id: string;
  reverses_entry_id: string | null;
  memo: string | null;
  postings: Array<{ account: string; asset: string; amount: string; symbol: string; decimals: number }>;
}

export function entryView(e: ListedEntry): EntryView {
  return {
    id: e.id.toString(),
    kind: e.kind,
    occurred_at: e.occurredAt.toISOString(),
    recorded_at: e.recordedAt.toISOString(),
    store_id: e.storeId,
    ref_type: e.ref.type,
    ref_id: e.ref.id,
    reverses_entry_id: e.reversesEntryId?.toString() ?? null,
    memo: e.memo,
    postings: e.postings.map((p) => ({
      account: p.accountCode,
      asset: p.asset,
      amount: p.amount.toString(),
      symbol: p.symbol,
      decimals: p.decimals,
    })),
  };
}
