import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import { postEntry, reverseEntry } from '../ledger/postEntry.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { unmatchedTransfer, type WatchedWalletRole } from '../ledger/rules/chainTransferRules.ts';
import {
  classificationProblem,
  type SuspenseClassification,
  suspenseClassified,
} from '../ledger/rules/suspenseRules.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { SuspenseItemError } from './errors.ts';
import { findSuspenseItem, type SuspenseItem, suspenseItemByEntry } from './suspenseItems.ts';

/**
 * A person's classification of an item in suspense (docs/accounting.md, rule 10), and its undoing.
 * Each call is one transaction of the caller's; the item's rule-9 entry is locked first
 * (lockSuspenseEntry), so two classifications of one item, or a classification and a rule that
 * explains the transfer (supersedeClassification), take turns and never both move its money.
 *
 * Glossary
 * - item: a live rule-9 entry still in suspense (src/suspense/suspenseItems.ts);
 * - live classification: the one not reversed; at most one per item (a unique index);
 * - superseded: reversed by stablebooks because a rule explained the transfer after all.
 */

/** Who `reversed_by` names when a rule, not a person, reversed a classification. */
export const SUPERSEDED_BY = 'stablebooks';
const NOTE_MAX = 2000;
/** Class of the two-key advisory lock on a rule-9 entry (the indexer's lock has another class). */
const SUSPENSE_ENTRY_LOCK_CLASS = 0x5b_5e_e9;
const BY_MAX = 200;

export interface ClassifyRequest {
  /** The item: entry id, `<chain id>:<tx hash>:<log index>`, `<tx hash>:<log index>` or a tx hash. */
  item: string;
  classification: SuspenseClassification;
  note: string;
  by: string;
  /** When the person classified it (the entry's date). */
  at: Date;
}

export type ClassifyOutcome =
  | { kind: 'classified'; item: SuspenseItem; entryId: bigint; findingResolved: boolean }
  /** Already classified the same way: nothing booked, the classification as it was. */
  | { kind: 'unchanged'; item: SuspenseItem };

/**
 * Moves an item's money out of suspense to the classification's account, records who and why in
 * suspense_classifications and resolves the item's `unmatched_transfer_in`. The same classification
 * again books nothing (`unchanged`); another one is refused until the first is unclassified.
 */
export async function classifySuspense(
  tx: DbExecutor,
  request: ClassifyRequest,
  options: { accounts?: AccountCache } = {},
): Promise<ClassifyOutcome> {
  const note = checkedText('--note', request.note, NOTE_MAX);
  const by = checkedText('--by', request.by, BY_MAX);
  const item = await lockedItem(tx, request.item);
  const live = item.classification;
  if (live !== null) {
    if (live.classification === request.classification) return { kind: 'unchanged', item };
    throw new SuspenseItemError(
      'already_classified',
      `${describe(item)} is already classified as ${live.classification} by ${live.classifiedBy} at ${live.classifiedAt.toISOString()}; unclassify it first`,
    );
  }
  const problem = classificationProblem(request.classification, item.direction);
  if (problem !== null) throw new SuspenseItemError('wrong_direction', `${describe(item)}: ${problem}`);

  // Each earlier classification of this item was reversed (no live one): the next key's revision.
  const earlier = await tx.execute<{ n: number }>(sql`
    select count(*)::int as n from suspense_classifications where suspense_entry_id = ${item.entryId.toString()}::bigint`);
  const draft = suspenseClassified({
    storeId: item.storeId,
    suspenseEntryId: item.entryId,
    ref: { type: 'chain_transfer', id: item.transferId },
    token: item.token,
    direction: item.direction,
    amount: item.amount,
    classification: request.classification,
    revision: earlier.rows[0]?.n ?? 0,
    classifiedAt: request.at,
    classifiedBy: by,
    note,
  });
  const posted = await postEntry(tx, draft, options);
  await tx.execute(sql`
    insert into suspense_classifications
      (suspense_entry_id, entry_id, store_id, classification, note, classified_by, classified_at)
    values (${item.entryId.toString()}::bigint, ${posted.id.toString()}::bigint, ${item.storeId},
            ${request.classification}, ${note}, ${by}, ${request.at.toISOString()}::timestamptz)`);
  const resolved = await tx.execute(sql`
    update findings set resolved_at = now()
    where kind = 'unmatched_transfer_in' and ref_type = 'chain_transfer' and ref_id = ${item.transferId}
      and resolved_at is null
    returning id`);
  const classified = await suspenseItemByEntry(tx, item.entryId);
  return {
    kind: 'classified',
    item: classified ?? item,
    entryId: posted.id,
    findingResolved: resolved.rows.length > 0,
  };
}

export interface UnclassifyRequest {
  item: string;
  note: string;
  by: string;
  at: Date;
}

/**
 * Undoes an item's live classification: its entry is reversed (dated `at`), the row is marked
 * reversed with who and why, and the item's `unmatched_transfer_in` is open again. The item is in
 * suspense as rule 9 left it, and may be classified again (under the key's next revision).
 */
export async function unclassifySuspense(
  tx: DbExecutor,
  request: UnclassifyRequest,
): Promise<{ item: SuspenseItem; reversed: SuspenseClassification; reversalEntryId: bigint }> {
  const note = checkedText('--note', request.note, NOTE_MAX);
  const by = checkedText('--by', request.by, BY_MAX);
  const item = await lockedItem(tx, request.item);
  const live = item.classification;
  if (live === null)
    throw new SuspenseItemError('not_classified', `${describe(item)} is not classified; nothing to undo`);
  const reversal = await reverseEntry(tx, live.entryId, note, { occurredAt: request.at });
  await markReversed(tx, live.id, by, note, request.at);
  await reopenFinding(tx, item);
  const after = await suspenseItemByEntry(tx, item.entryId);
  return { item: after ?? item, reversed: live.classification, reversalEntryId: reversal.id };
}

/**
 * For the rules that explain a transfer after rule 9 booked it to suspense (rule 2's proof, a
 * payment return, rule 3's reorg): reverses a live classification of that rule-9 entry, in the
 * rule's transaction and before the rule moves the money, so the money is never counted twice
 * (once in the classification's account, once where the rule books it). The reversal keeps the
 * classification's date; the row is marked reversed by `stablebooks` with `reason`, and an
 * info finding `suspense_classification_superseded` tells the person who classified it. Returns
 * whether there was one. Locks the rule-9 entry, as a classification does.
 */
export async function supersedeClassification(
  tx: DbExecutor,
  suspenseEntryId: bigint,
  reason: string,
): Promise<boolean> {
  await lockSuspenseEntry(tx, suspenseEntryId);
  const locked = await tx.execute<{ store_id: string; ref_id: string }>(sql`
    select store_id, ref_id from ledger_entries where id = ${suspenseEntryId.toString()}::bigint`);
  const entry = locked.rows[0];
  if (!entry) return false;
  const { rows } = await tx.execute<{
    id: string;
    entry_id: string;
    classification: string;
    note: string;
    classified_by: string;
    classified_at: Date | string;
  }>(sql`
    select id::text, entry_id::text, classification, note, classified_by, classified_at
    from suspense_classifications
    where suspense_entry_id = ${suspenseEntryId.toString()}::bigint and reversed_at is null`);
  const live = rows[0];
  if (!live) return false;
  await reverseEntry(tx, BigInt(live.entry_id), reason);
  await markReversed(tx, BigInt(live.id), SUPERSEDED_BY, reason, null);
  await recordFinding(
    tx,
    {
      kind: 'suspense_classification_superseded',
      severity: 'info',
      ref: { type: 'chain_transfer', id: entry.ref_id },
      details: {
        what: 'a rule explained this transfer after a person classified it: the classification was reversed',
        reason,
        classification: live.classification,
        classified_by: live.classified_by,
        classified_at: new Date(live.classified_at).toISOString(),
        note: live.note,
        suspense_entry_id: suspenseEntryId.toString(),
      },
    },
    entry.store_id,
  );
  return true;
}

/** supersedeClassification for the rule-9 entry booked under `key`, if there is one. */
export async function supersedeClassificationOfKey(
  tx: DbExecutor,
  key: string,
  reason: string,
): Promise<boolean> {
  const { rows } = await tx.execute<{ id: string }>(
    sql`select id::text from ledger_entries where idempotency_key = ${key}`,
  );
  return rows[0] ? supersedeClassification(tx, BigInt(rows[0].id), reason) : false;
}

/** The named item, read again after its rule-9 entry is locked (what committed before the lock). */
async function lockedItem(tx: DbExecutor, name: string): Promise<SuspenseItem> {
  const found = await findSuspenseItem(tx, name);
  await lockSuspenseEntry(tx, found.entryId);
  const item = await suspenseItemByEntry(tx, found.entryId);
  if (!item)
    throw new SuspenseItemError(
      'not_found',
      `${describe(found)} left suspense just now (a rule explained it); nothing changed`,
    );
  return item;
}

/**
 * Locks a rule-9 entry until the end of the transaction. An advisory lock, not `select ... for
 * update`: a row lock needs UPDATE on ledger_entries, which the daemon's role does not hold
 * (src/db/runtimeGrants.ts: the ledger is append-only). The statements after it read what
 * committed before it was granted (read committed), as after a row lock. Entry ids are hashed
 * to the lock's 32-bit key: two entries sharing a hash only wait for each other.
 */
async function lockSuspenseEntry(tx: DbExecutor, entryId: bigint): Promise<void> {
  await tx.execute(
    sql`select pg_advisory_xact_lock(${SUSPENSE_ENTRY_LOCK_CLASS}, hashint8(${entryId.toString()}::bigint))`,
  );
}

async function markReversed(
  tx: DbExecutor,
  id: bigint,
  by: string,
  note: string,
  at: Date | null,
): Promise<void> {
  await tx.execute(sql`
    update suspense_classifications
    set reversed_at = coalesce(${at?.toISOString() ?? null}::timestamptz, now()), reversed_by = ${by},
        reversal_note = ${note}
    where id = ${id.toString()}::bigint and reversed_at is null`);
}

/** The item's `unmatched_transfer_in`, open again as rule 9 wrote it. */
async function reopenFinding(tx: DbExecutor, item: SuspenseItem): Promise<void> {
  const m = item.metadata;
  const fact: ChainTransferFact = {
    chainId: item.chainId,
    txHash: item.txHash as `0x${string}`,
    logIndex: item.logIndex,
    blockNumber: BigInt(String(m.block_number ?? '0')),
    blockHash: String(m.block_hash ?? '') as `0x${string}`,
    tokenAddress: item.token.address,
    from: String(m.from ?? '') as `0x${string}`,
    to: String(m.to ?? '') as `0x${string}`,
    amount: item.amount,
    occurredAt: item.occurredAt,
    ...(typeof m.revival === 'number' ? { revival: m.revival } : {}),
  };
  const outcome = unmatchedTransfer({
    storeId: item.storeId,
    transfer: fact,
    token: item.token,
    wallet: { address: item.wallet as `0x${string}`, role: item.walletRole as WatchedWalletRole },
  });
  for (const f of outcome.findings) await recordFinding(tx, f, item.storeId);
}

function checkedText(option: string, value: string, max: number): string {
  const text = value.trim();
  if (text.length === 0) throw new SuspenseItemError('bad_input', `${option}: must say something`);
  if (text.length > max) throw new SuspenseItemError('bad_input', `${option}: at most ${max} characters`);
  return text;
}

/** `transfer <id> (entry <n>, <amount> <symbol>)`, for one-line messages. */
export function describe(item: SuspenseItem): string {
  return `transfer ${item.transferId} (entry ${item.entryId}, ${formatDecimalAmount(item.amount, item.token.decimals)} ${item.token.symbol})`;
}
