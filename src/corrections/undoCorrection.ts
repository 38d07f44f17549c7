import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { reverseEntry } from '../ledger/postEntry.ts';
import { type Correction, readCorrections } from './correction.ts';
import { CorrectionError, checkedText } from './errors.ts';
import { BY_MAX, NOTE_MAX } from './moveLeftover.ts';

export type UndoOutcome =
  | { kind: 'undone'; correction: Correction; reversalEntryId: bigint }
  /** Undone before: nothing written, the correction as it was. */
  | { kind: 'unchanged'; correction: Correction };

/**
 * `stablebooks adjust undo`: reverses a correction's entry (dated `at`, the note as its memo) and
 * marks the row undone with who and why. The leftover is back where the rule left it. The row is
 * locked first, so two undos take turns and the second says so and writes nothing.
 */
export async function undoCorrection(
  tx: DbExecutor,
  request: { correction: string; note: string; by: string; at: Date },
): Promise<UndoOutcome> {
  const note = checkedText('--note', request.note, NOTE_MAX);
  const by = checkedText('--by', request.by, BY_MAX);
  const text = request.correction.trim();
  if (!/^\d{1,18}$/.test(text))
    throw new CorrectionError(
      'not_found',
      `${JSON.stringify(request.correction)} is no correction id (see stablebooks adjust list)`,
    );
  const [correction] = await readCorrections(tx, sql`c.id = ${text}::bigint`, true);
  if (!correction)
    throw new CorrectionError('not_found', `no correction ${text} (see stablebooks adjust list)`);
  if (correction.undoneAt !== null) return { kind: 'unchanged', correction };
  const reversal = await reverseEntry(tx, correction.entryId, note, { occurredAt: request.at });
  await tx.execute(sql`
    update corrections set undone_at = ${request.at.toISOString()}::timestamptz, undone_by = ${by}, undo_note = ${note}
    where id = ${text}::bigint and undone_at is null`);
  const [after] = await readCorrections(tx, sql`c.id = ${text}::bigint`);
  return { kind: 'undone', correction: after ?? correction, reversalEntryId: reversal.id };
}
