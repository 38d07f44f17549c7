import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { FindingKind } from '../findings/findingKinds.ts';

/**
 * What one reconciliation run found, before it becomes findings. Each check inserts its findings
 * set-based into a temporary table (dropped at commit); `syncFindings` then writes them all in
 * two statements: open or refresh every finding found, and resolve every open finding of the
 * kinds the run checked that was not found again (its cause has cleared).
 *
 * A check owns the (kind, ref type) pairs it can decide alone; a check that could not read its
 * source owns nothing, so an unreadable source never resolves a finding. In a store-scoped run it
 * owns them for the run's store (findings.store_id), or, for a check scoped by what it looked at
 * rather than by store (the proofs of the store's wallets, whose findings have no store_id, as a
 * wallet can be shared), for the refs it names.
 */
export interface OwnedKind {
  kind: FindingKind;
  refType: string;
  /** Only the findings of these refs, whatever their store_id and the run's store. */
  refIds?: string[];
}

export async function createFoundTable(tx: DbExecutor): Promise<void> {
  await tx.execute(sql`
    create temp table recon_found (
      kind text not null, severity text not null, store_id text,
      ref_type text not null, ref_id text not null, details jsonb not null
    ) on commit drop`);
}

/**
 * Inserts the rows of a select returning (kind, severity, store_id, ref_type, ref_id, details).
 * The select runs as a CREATE TABLE AS, which PostgreSQL may spread over parallel workers (an
 * INSERT ... SELECT never is); its rows, a few thousand at most, are then moved into recon_found.
 */
export async function insertFound(tx: DbExecutor, select: SQL): Promise<number> {
  await tx.execute(
    sql`create temp table recon_found_step (kind, severity, store_id, ref_type, ref_id, details) on commit drop as ${select}`,
  );
  const { rows } = await tx.execute<{ n: string }>(sql`
    with found as (
      insert into recon_found (kind, severity, store_id, ref_type, ref_id, details)
      select * from recon_found_step
      returning 1
    )
    select count(*)::text as n from found`);
  await tx.execute(sql`drop table recon_found_step`);
  return Number(rows[0]?.n ?? 0);
}

export interface FindingsSync {
  opened: number;
  refreshed: number;
  resolved: number;
}

export async function syncFindings(
  tx: DbExecutor,
  owned: OwnedKind[],
  storeId: string | null,
): Promise<FindingsSync> {
  const written = await tx.execute<{ opened: string; refreshed: string }>(sql`
    with written as (
      insert into findings (kind, severity, store_id, ref_type, ref_id, details)
      select distinct on (kind, ref_type, ref_id) kind, severity, store_id, ref_type, ref_id, details
      from recon_found order by kind, ref_type, ref_id
      on conflict (kind, ref_type, ref_id) where resolved_at is null
      do update set last_seen_at = now(), severity = excluded.severity, details = excluded.details
      returning (xmax = 0) as inserted
    )
    select count(*) filter (where inserted)::text as opened, count(*) filter (where not inserted)::text as refreshed
    from written`);
  let resolved = 0;
  const byStore = owned.filter((o) => o.refIds === undefined);
  const byRef = owned.filter((o) => o.refIds !== undefined && o.refIds.length > 0);
  const ownedFinding: SQL[] = [];
  if (byStore.length > 0)
    ownedFinding.push(
      sql`((f.kind, f.ref_type) in (${sql.join(
        byStore.map((o) => sql`(${o.kind}, ${o.refType})`),
        sql`, `,
      )}) and (${storeId}::text is null or f.store_id = ${storeId}::text))`,
    );
  for (const o of byRef)
    ownedFinding.push(
      sql`(f.kind = ${o.kind} and f.ref_type = ${o.refType} and f.ref_id in (${sql.join(
        (o.refIds ?? []).map((r) => sql`${r}`),
        sql`, `,
      )}))`,
    );
  if (ownedFinding.length > 0) {
    const res = await tx.execute<{ n: string }>(sql`
      with done as (
        update findings f set resolved_at = now()
        where f.resolved_at is null
          and (${sql.join(ownedFinding, sql` or `)})
          and not exists (
            select 1 from recon_found r
            where r.kind = f.kind and r.ref_type = f.ref_type and r.ref_id = f.ref_id)
        returning 1
      )
      select count(*)::text as n from done`);
    resolved = Number(res.rows[0]?.n ?? 0);
  }
  return {
    opened: Number(written.rows[0]?.opened ?? 0),
    refreshed: Number(written.rows[0]?.refreshed ?? 0),
    resolved,
  };
}
