import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { AccountKind } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { adjustmentMoved, correctionTargetProblem } from '../ledger/rules/correctionRules.ts';
import { AmountFormatError, formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import { type Correction, readCorrections } from './correction.ts';
import { CorrectionError, checkedText } from './errors.ts';
import { lockedFindingLeftover } from './findingLeftover.ts';

export const NOTE_MAX = 2000;
export const BY_MAX = 200;

export interface MoveRequest {
  /** The finding's id. */
  finding: string;
  /** The account kind the leftover moves to. */
  to: string;
  /** Token units as a decimal; the whole leftover when absent. */
  amount?: string;
  note: string;
  by: string;
  /** When the person made it (the entry's date). */
  at: Date;
}

/**
 * `stablebooks adjust move`: moves (part of) what a finding's intent leaves in in_transit or
 * suspense to the account a person names, as one `adjustment.moved` entry under the correction's
 * own key, records who and why in `corrections`, and acknowledges the finding with the note (it
 * stays as history). Everything in the caller's transaction; any refusal writes nothing.
 */
export async function moveLeftover(
  tx: DbExecutor,
  request: MoveRequest,
  options: { accounts?: AccountCache } = {},
): Promise<{ correction: Correction; leftAfter: bigint }> {
  const note = checkedText('--note', request.note, NOTE_MAX);
  const by = checkedText('--by', request.by, BY_MAX);
  const found = await lockedFindingLeftover(tx, request.finding);
  const problem = correctionTargetProblem(request.to, found.leftover);
  if (problem !== null) throw new CorrectionError('bad_account', problem);
  const whole = found.leftover < 0n ? -found.leftover : found.leftover;
  const amount = request.amount === undefined ? whole : parsedAmount(request.amount, found.token.decimals);
  const fmt = (u: bigint) => `${formatDecimalAmount(u, found.token.decimals)} ${found.token.symbol}`;
  if (amount > whole)
    throw new CorrectionError(
      'bad_amount',
      `--amount: ${fmt(amount)} is more than the ${fmt(whole)} finding ${found.findingId} leaves in ${found.source}`,
    );
  // nextval first: the entry's key names the correction, and the row names the entry.
  const next = await tx.execute<{ id: string }>(
    sql`select nextval(pg_get_serial_sequence('corrections', 'id'))::text as id`,
  );
  const id = BigInt(next.rows[0]?.id ?? '0');
  const draft = adjustmentMoved({
    correctionId: id,
    storeId: found.storeId,
    ref: found.ref,
    token: found.token,
    from: found.source,
    to: request.to as AccountKind,
    leftover: found.leftover,
    amount,
    findingId: found.findingId,
    findingKind: found.kind,
    note,
    madeBy: by,
    madeAt: request.at,
  });
  const posted = await postEntry(tx, draft, options);
  await tx.execute(sql`
    insert into corrections (id, finding_id, entry_id, store_id, from_account, to_account, amount, note, made_by, made_at)
    values (${id.toString()}::bigint, ${found.findingId.toString()}::bigint, ${posted.id.toString()}::bigint,
            ${found.storeId}, ${found.source}, ${request.to}, ${amount.toString()}::numeric, ${note}, ${by},
            ${request.at.toISOString()}::timestamptz)`);
  await tx.execute(sql`
    update findings set acked_at = now(), ack_note = ${`correction ${id} by ${by}: ${note}`}
    where id = ${found.findingId.toString()}::bigint`);
  const [correction] = await readCorrections(tx, sql`c.id = ${id.toString()}::bigint`);
  if (!correction) throw new Error(`correction ${id} not read back`);
  return { correction, leftAfter: whole - amount };
}

function parsedAmount(text: string, decimals: number): bigint {
  let amount: bigint;
  try {
    amount = parseDecimalAmount(text.trim(), decimals);
  } catch (err) {
    if (err instanceof AmountFormatError) throw new CorrectionError('bad_amount', `--amount: ${err.message}`);
    throw err;
  }
  if (amount === 0n) throw new CorrectionError('bad_amount', '--amount: must be above zero');
  return amount;
}
