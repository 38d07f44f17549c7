import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/**
 * Allocations (docs/accounting.md, "Pieces and bundles"): which part of a final transfer's side
 * settles which obligation. Every rule that books from a transfer allocates what it explains, in
 * the transaction of its entry; what a rule reads as "already settled" of an obligation is the sum
 * of its live allocations, never one transaction hash. Rows are append-only (migration 0022): a
 * reorg or a re-match releases an allocation with a row of the negated amount.
 */

/** The receiving wallet's side of a transfer (`in`) or the sending wallet's (`out`). */
export type AllocationSide = 'in' | 'out';

export type ObligationType = 'checkout_intent' | 'claim_link' | 'suspense' | 'owner';

export type AllocationPurpose =
  | 'payment'
  | 'payment_excess'
  | 'funding'
  | 'fee_sweep'
  | 'claim'
  | 'refund'
  | 'return'
  | 'unmatched';

export interface Obligation {
  type: ObligationType;
  id: string;
}

export interface AllocationDraft {
  /** chain_transfers.id */
  transferId: string;
  side: AllocationSide;
  obligation: Obligation;
  purpose: AllocationPurpose;
  /** Base units, above zero. */
  amount: bigint;
  /** The rule that allocated it, as docs/accounting.md names it (`rule 2`, `rule 5`, ...). */
  rule: string;
  /** The entry the allocation caused; null when it books nothing itself. */
  entryId: bigint | null;
  storeId: string;
}

/** A live allocation (not released), as read back. */
export type LiveAllocation = {
  id: string;
  transfer_id: string;
  side: AllocationSide;
  obligation_type: ObligationType;
  obligation_id: string;
  purpose: AllocationPurpose;
  amount: string;
  rule: string;
  entry_id: string | null;
  store_id: string;
};

/** Records one allocation; a zero amount records nothing (a rule that explains nothing of it). */
export async function allocate(tx: DbExecutor, draft: AllocationDraft): Promise<void> {
  if (draft.amount === 0n) return;
  if (draft.amount < 0n) throw new RangeError(`allocate: negative amount ${draft.amount}`);
  await tx.execute(sql`
    insert into allocations
      (transfer_id, side, obligation_type, obligation_id, purpose, amount, rule, entry_id, store_id)
    values (${draft.transferId}::bigint, ${draft.side}, ${draft.obligation.type}, ${draft.obligation.id},
            ${draft.purpose}, ${draft.amount.toString()}::numeric, ${draft.rule},
            ${draft.entryId === null ? null : draft.entryId.toString()}::bigint, ${draft.storeId})`);
}

const liveColumns = sql.raw(
  'a.id::text, a.transfer_id::text, a.side, a.obligation_type, a.obligation_id, a.purpose, a.amount::text, a.rule, a.entry_id::text, a.store_id',
);

/** The live allocations of one transfer (both sides unless one is named), oldest first. */
export async function transferAllocations(
  tx: DbExecutor,
  transferId: string,
  side?: AllocationSide,
): Promise<LiveAllocation[]> {
  const { rows } = await tx.execute<LiveAllocation>(sql`
    select ${liveColumns} from allocations a
    where a.transfer_id = ${transferId}::bigint and a.releases is null
      ${side ? sql`and a.side = ${side}` : sql``}
      and not exists (select 1 from allocations r where r.releases = a.id)
    order by a.id`);
  return rows;
}

/**
 * Releases live allocations of a transfer (a reorg orphaned it, or a later rule re-matches it),
 * each with a row of its negated amount; `only` narrows them to a side or to some purposes.
 * Returns what was released.
 */
export async function releaseAllocations(
  tx: DbExecutor,
  transferId: string,
  reason: string,
  only: { side?: AllocationSide; purposes?: readonly AllocationPurpose[] } = {},
): Promise<LiveAllocation[]> {
  const live = (await transferAllocations(tx, transferId, only.side)).filter(
    (a) => !only.purposes || only.purposes.includes(a.purpose),
  );
  for (const a of live) {
    await tx.execute(sql`
      insert into allocations
        (transfer_id, side, obligation_type, obligation_id, purpose, amount, rule, entry_id, store_id, releases, reason)
      values (${a.transfer_id}::bigint, ${a.side}, ${a.obligation_type}, ${a.obligation_id}, ${a.purpose},
              ${(-BigInt(a.amount)).toString()}::numeric, ${a.rule}, ${a.entry_id}::bigint, ${a.store_id},
              ${a.id}::bigint, ${reason})`);
  }
  return live;
}

/**
 * What an obligation holds of final, unorphaned transfers for the given purposes (every purpose
 * when none is named): the sum of its live allocations. A released allocation counts zero.
 */
export async function allocatedTo(
  tx: DbExecutor,
  obligation: Obligation,
  purposes?: readonly AllocationPurpose[],
): Promise<bigint> {
  const { rows } = await tx.execute<{ total: string | null }>(sql`
    select sum(a.amount)::text as total from allocations a
    where a.obligation_type = ${obligation.type} and a.obligation_id = ${obligation.id}
      ${
        purposes
          ? sql`and a.purpose in (${sql.join(
              purposes.map((p) => sql`${p}`),
              sql`, `,
            )})`
          : sql``
      }`);
  return BigInt(rows[0]?.total ?? '0');
}

/** How much of one side of a transfer no live allocation explains yet. */
export async function unallocated(tx: DbExecutor, transferId: string, side: AllocationSide): Promise<bigint> {
  const { rows } = await tx.execute<{ value: string; allocated: string | null }>(sql`
    select t.value::text as value,
      (select sum(a.amount) from allocations a where a.transfer_id = t.id and a.side = ${side})::text as allocated
    from chain_transfers t where t.id = ${transferId}::bigint`);
  const row = rows[0];
  if (!row) return 0n;
  return BigInt(row.value) - BigInt(row.allocated ?? '0');
}

/** An allocation as `ledger entries --explain` shows it beside the entry it caused. */
export type EntryAllocation = {
  entry_id: string;
  /** `<chain id>:<tx hash>:<log index>` of the transfer. */
  transfer: string;
  side: AllocationSide;
  obligation_type: ObligationType;
  obligation_id: string;
  purpose: AllocationPurpose;
  amount: string;
  rule: string;
  /** Why it was released (a reorg, the entry reversed), or null while it stands. */
  released: string | null;
};

/** The allocations the given entries caused, with their transfers: what each entry rests on. */
export async function entryAllocations(
  tx: DbExecutor,
  entryIds: readonly bigint[],
): Promise<EntryAllocation[]> {
  if (entryIds.length === 0) return [];
  const { rows } = await tx.execute<EntryAllocation>(sql`
    select a.entry_id::text, t.chain_id || ':' || t.tx_hash || ':' || t.log_index as transfer, a.side,
      a.obligation_type, a.obligation_id, a.purpose, a.amount::text, a.rule,
      (select r.reason from allocations r where r.releases = a.id) as released
    from allocations a join chain_transfers t on t.id = a.transfer_id
    where a.releases is null and a.entry_id in (${sql.join(
      entryIds.map((id) => sql`${id.toString()}::bigint`),
      sql`, `,
    )})
    order by a.entry_id, a.id`);
  return rows;
}
