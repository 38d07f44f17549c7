import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import type { FindingRow } from './finding.ts';
import { listFindings } from './listFindings.ts';

export type AckOutcome = { kind: 'acked'; finding: FindingRow } | { kind: 'not_found' };

/**
 * A person has looked at a finding: acked_at and their note. The finding stays open until its
 * cause clears (an ack silences nothing in the books); acking again replaces the note.
 */
export async function ackFinding(db: Db, id: bigint, note: string): Promise<AckOutcome> {
  const { rows } = await db.execute<{ id: string }>(sql`
    update findings set acked_at = now(), ack_note = ${note} where id = ${id.toString()}::bigint returning id::text`);
  if (!rows[0]) return { kind: 'not_found' };
  const [finding] = await listFindings(db, { id });
  return finding ? { kind: 'acked', finding } : { kind: 'not_found' };
}
