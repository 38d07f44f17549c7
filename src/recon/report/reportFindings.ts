import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../../db/database.ts';
import type { FindingRow } from '../../findings/finding.ts';
import { type FindingDbRow, toFindingRow } from '../../findings/listFindings.ts';
import type { Period } from '../period.ts';
import type { FindingsSection } from './reportModel.ts';

/**
 * The findings of a report, read without holding them: the counts and the age chart are
 * aggregates computed by PostgreSQL, the report carries the first few of each kind per list, and
 * the full lists are read page by page from a cursor while findings.csv is written.
 *
 * Each list is ordered by first_seen_at, then by the id as text (every finding one run opens has
 * the same first_seen_at; version 1 of the report ordered ties so, and the lists keep its order).
 *
 * Glossary: the three lists are `new` (first seen in the period), `open` (first seen before it,
 * still unresolved) and `resolved` (resolved in the period); a finding first seen and resolved
 * in the period is in both `new` and `resolved`.
 */
export interface FindingsScope {
  period: Period;
  storeId: string | null;
  generatedAt: Date;
}

export type FindingsList = 'new' | 'open' | 'resolved';

/** One page of the full lists, in report order: new, open, resolved, each by first seen then id (as text). */
export interface FindingsPage {
  list: FindingsList;
  rows: FindingRow[];
}

const PAGE_ROWS = 2000;
const HOUR_MS = 3_600_000;

/** The columns of FINDING_COLUMNS (findingsList.ts) of the findings table aliased `f`. */
const F_COLUMNS = sql.raw(
  'f.id::text as id, f.kind, f.severity, f.store_id, f.ref_type, f.ref_id, f.details, f.first_seen_at, ' +
    'f.last_seen_at, f.resolved_at, f.acked_at, f.ack_note',
);

/**
 * Findings are stamped with PostgreSQL's now(); the period is on the run's clock, which in the
 * demo and the tests follows the sandbox's, days ahead. Move the period's start onto the
 * database's time line (the offset is ~0 in production, where both are the system clock).
 */
async function periodStartOnDbClock(tx: DbExecutor, scope: FindingsScope): Promise<string> {
  const dbNow = await tx.execute<{ now: Date | string }>(sql`select now() as now`);
  const offsetMs = new Date(dbNow.rows[0]?.now ?? scope.generatedAt).getTime() - scope.generatedAt.getTime();
  return new Date(scope.period.from.getTime() + offsetMs).toISOString();
}

/** The findings of the report's store (and the unscoped ones) that fall in at least one list. */
function inScope(scope: FindingsScope, from: string): SQL {
  return sql`(${scope.storeId}::text is null or f.store_id = ${scope.storeId}::text or f.store_id is null)
    and (f.first_seen_at >= ${from}::timestamptz or f.resolved_at is null or f.resolved_at >= ${from}::timestamptz)`;
}

/** (list, hit) per finding: the lists a finding is in, with their order in the report. */
function lists(from: string): SQL {
  return sql`(values
    (1, 'new', f.first_seen_at >= ${from}::timestamptz),
    (2, 'open', f.first_seen_at < ${from}::timestamptz and f.resolved_at is null),
    (3, 'resolved', f.resolved_at >= ${from}::timestamptz)) as l(ord, list, hit)`;
}

/** Counts by kind and severity, ages of the unresolved ones, and the first `samplePerKind` per kind of each list. */
export async function findingsSection(
  tx: DbExecutor,
  scope: FindingsScope,
  samplePerKind: number,
  fullList: string | null,
): Promise<FindingsSection> {
  const from = await periodStartOnDbClock(tx, scope);
  const counts = await tx.execute<{
    kind: string;
    severity: string;
    new: number;
    open: number;
    resolved: number;
  }>(
    sql`
    select f.kind, f.severity,
           count(*) filter (where f.first_seen_at >= ${from}::timestamptz)::int as new,
           count(*) filter (where f.first_seen_at < ${from}::timestamptz and f.resolved_at is null)::int as open,
           count(*) filter (where f.resolved_at >= ${from}::timestamptz)::int as resolved
    from findings f
    where ${inScope(scope, from)}
    group by f.kind, f.severity`,
  );
  // Age on the database's clock, which stamps first_seen_at and which the period's start was moved
  // onto above: now() is this transaction's start, the instant periodStartOnDbClock read, i.e.
  // generatedAt on that time line. Against the run's clock, a skewed one (the sandbox's, days
  // ahead; or one behind) would age every finding by the skew, or make ages negative.
  // To the millisecond, as the times the report prints.
  const ageMs = sql`extract(epoch from (date_trunc('milliseconds', now()) - date_trunc('milliseconds', f.first_seen_at))) * 1000`;
  const ages = await tx.execute<{ kind: string; lt1h: number; h1to1d: number; d1to7d: number; gt7d: number }>(
    sql`
    select f.kind,
           count(*) filter (where ${ageMs} < ${HOUR_MS})::int as lt1h,
           count(*) filter (where ${ageMs} >= ${HOUR_MS} and ${ageMs} < ${24 * HOUR_MS})::int as h1to1d,
           count(*) filter (where ${ageMs} >= ${24 * HOUR_MS} and ${ageMs} < ${7 * 24 * HOUR_MS})::int as d1to7d,
           count(*) filter (where ${ageMs} >= ${7 * 24 * HOUR_MS})::int as gt7d
    from findings f
    where ${inScope(scope, from)} and f.resolved_at is null
    group by f.kind`,
  );
  // Numbered on the narrow columns only; the few rows kept are then read whole.
  const sample = await tx.execute<FindingDbRow & { list: FindingsList; [column: string]: unknown }>(sql`
    select s.list, ${F_COLUMNS}
    from (
      select f.id, l.list, l.ord,
             row_number() over (partition by l.ord, f.kind order by f.first_seen_at, f.id::text) as rn
      from findings f cross join lateral ${lists(from)}
      where ${inScope(scope, from)} and l.hit
    ) s
    join findings f on f.id = s.id
    where s.rn <= ${samplePerKind}
    order by s.ord, f.first_seen_at, f.id::text`);

  const byKind = counts.rows.sort(
    (a, b) => a.kind.localeCompare(b.kind) || a.severity.localeCompare(b.severity),
  );
  const section: FindingsSection = {
    counts: {
      new: byKind.reduce((n, k) => n + k.new, 0),
      open: byKind.reduce((n, k) => n + k.open, 0),
      resolved: byKind.reduce((n, k) => n + k.resolved, 0),
    },
    byKind: byKind.map((k) => ({
      kind: k.kind,
      severity: k.severity,
      new: k.new,
      open: k.open,
      resolved: k.resolved,
    })),
    unresolvedByAge: ages.rows
      .map((a) => ({ kind: a.kind, lt1h: a.lt1h, h1to1d: a.h1to1d, d1to7d: a.d1to7d, gt7d: a.gt7d }))
      .sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)),
    samplePerKind,
    fullList,
    new: [],
    open: [],
    resolved: [],
  };
  for (const r of sample.rows) section[r.list].push(toFindingRow(r));
  return section;
}

/**
 * Every finding of the three lists, in report order, PAGE_ROWS at a time from a cursor in the
 * caller's transaction (which must stay open while the pages are read): memory holds one page.
 */
export async function* findingsPages(tx: DbExecutor, scope: FindingsScope): AsyncGenerator<FindingsPage> {
  const from = await periodStartOnDbClock(tx, scope);
  await tx.execute(sql`
    declare recon_findings_pages no scroll cursor for
    select l.list, ${F_COLUMNS}
    from findings f cross join lateral ${lists(from)}
    where ${inScope(scope, from)} and l.hit
    order by l.ord, f.first_seen_at, f.id::text`);
  type PageRow = FindingDbRow & { list: FindingsList; [column: string]: unknown };
  const fetchPage = () => tx.execute<PageRow>(sql.raw(`fetch ${PAGE_ROWS} from recon_findings_pages`));
  // The next page is asked for before this one is handed out, so PostgreSQL reads it while the
  // caller formats and writes this one.
  let next = fetchPage();
  try {
    for (;;) {
      const { rows } = await next;
      if (rows.length === 0) return;
      next = fetchPage();
      // One page can span two lists; split it so each page names one.
      let start = 0;
      for (let i = 1; i <= rows.length; i += 1) {
        if (i === rows.length || rows[i]?.list !== rows[start]?.list) {
          yield { list: rows[start]?.list as FindingsList, rows: rows.slice(start, i).map(toFindingRow) };
          start = i;
        }
      }
    }
  } finally {
    await next.catch(() => undefined);
    // After an error the transaction is aborted and rolls back, which closes the cursor anyway.
    await tx.execute(sql`close recon_findings_pages`).catch(() => undefined);
  }
}
