import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { toJsonb } from '../db/storableJson.ts';
import type { FindingDraft } from './finding.ts';

/**
 * Writes a finding, or refreshes the open one of the same (kind, ref): at most one open finding
 * per cause (docs/accounting.md, "Findings"). Runs in the caller's transaction, beside the fact it is about.
 */
export async function recordFinding(
  tx: DbExecutor,
  finding: FindingDraft,
  storeId: string | null,
): Promise<void> {
  await tx.execute(sql`
    insert into findings (kind, severity, store_id, ref_type, ref_id, details)
    values (${finding.kind}, ${finding.severity}, ${storeId}, ${finding.ref.type}, ${finding.ref.id},
            ${toJsonb(finding.details)}::jsonb)
    on conflict (kind, ref_type, ref_id) where resolved_at is null
    do update set last_seen_at = now(), severity = excluded.severity, details = excluded.details`);
}

/** Marks the open finding of this (kind, ref) resolved: its cause has cleared. */
export async function resolveFinding(tx: DbExecutor, kind: string, ref: FindingDraft['ref']): Promise<void> {
  await tx.execute(sql`
    update findings set resolved_at = now()
    where kind = ${kind} and ref_type = ${ref.type} and ref_id = ${ref.id} and resolved_at is null`);
}
