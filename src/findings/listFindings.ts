import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import type { FindingRow } from './finding.ts';

export interface FindingsFilter {
  openOnly?: boolean;
  /** Only resolved findings (the cause cleared); with openOnly, nothing. */
  resolvedOnly?: boolean;
  kind?: string;
  severity?: FindingRow['severity'];
  storeId?: string;
  id?: bigint;
  /**
   * `last_seen` (default): most recently seen first, as the CLI lists them. `id`: newest first by
   * id, an order that never changes (a refreshed finding does not move), for pages that follow
   * each other by `beforeId`.
   */
  order?: 'last_seen' | 'id';
  /** Only findings with an id below this one (with order `id`: the page after that finding). */
  beforeId?: bigint;
  limit?: number;
}

/** A findings row as PostgreSQL returns it (select FINDING_COLUMNS). */
export interface FindingDbRow {
  id: string;
  kind: string;
  severity: FindingRow['severity'];
  store_id: string | null;
  ref_type: string;
  ref_id: string;
  details: Record<string, unknown>;
  first_seen_at: Date | string;
  last_seen_at: Date | string;
  resolved_at: Date | string | null;
  acked_at: Date | string | null;
  ack_note: string | null;
}

export const FINDING_COLUMNS = sql.raw(
  'id::text, kind, severity, store_id, ref_type, ref_id, details, first_seen_at, last_seen_at, resolved_at, acked_at, ack_note',
);

const iso = (t: Date | string | null) => (t === null ? null : new Date(t).toISOString());

export function toFindingRow(r: FindingDbRow): FindingRow {
  return {
    id: r.id,
    kind: r.kind,
    severity: r.severity,
    storeId: r.store_id,
    refType: r.ref_type,
    refId: r.ref_id,
    details: r.details,
    firstSeenAt: iso(r.first_seen_at) as string,
    lastSeenAt: iso(r.last_seen_at) as string,
    resolvedAt: iso(r.resolved_at),
    ackedAt: iso(r.acked_at),
    ackNote: r.ack_note,
  };
}

/** Findings, newest first (by last seen, or by id): what `stablebooks findings list` prints. */
export async function listFindings(db: Db, filter: FindingsFilter = {}): Promise<FindingRow[]> {
  const order = filter.order === 'id' ? sql`id desc` : sql`last_seen_at desc, id desc`;
  const { rows } = await db.execute<FindingDbRow & Record<string, unknown>>(sql`
    select ${FINDING_COLUMNS}
    from findings
    where (${filter.openOnly ?? false}::boolean = false or resolved_at is null)
      and (${filter.resolvedOnly ?? false}::boolean = false or resolved_at is not null)
      and (${filter.kind ?? null}::text is null or kind = ${filter.kind ?? null}::text)
      and (${filter.severity ?? null}::text is null or severity = ${filter.severity ?? null}::text)
      and (${filter.storeId ?? null}::text is null or store_id = ${filter.storeId ?? null}::text)
      and (${filter.id?.toString() ?? null}::bigint is null or id = ${filter.id?.toString() ?? null}::bigint)
      and (${filter.beforeId?.toString() ?? null}::bigint is null or id < ${filter.beforeId?.toString() ?? null}::bigint)
    order by ${order}
    limit ${filter.limit ?? 1000}`);
  return rows.map(toFindingRow);
}
