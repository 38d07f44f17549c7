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

/** Entries newest first, with their postings, filtered by ref id and/or kind, in one query. */
export async function listEntries(
  db: DbExecutor,
  filter: { refId?: string; kind?: string; storeId?: string; limit?: number } = {},
): Promise<ListedEntry[]> {
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
