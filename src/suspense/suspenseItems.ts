import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { Token } from '../ledger/accounts.ts';
import type { SuspenseClassification, SuspenseDirection } from '../ledger/rules/suspenseRules.ts';
import { SuspenseItemError } from './errors.ts';

/**
 * Items in suspense (docs/accounting.md, rule 10): each live rule-9 entry (`chain.transfer_in_unmatched`,
 * not reversed) whose money no payment return has cleared, with its live classification if a
 * person made one. Read from the ledger itself, so the list and the suspense account cannot
 * disagree about what rule 9 booked.
 *
 * Glossary
 * - item: one such entry; its id (the suspense entry id) names it for good;
 * - transfer id: `<chain id>:<tx hash>:<log index>`, the entry's ref and its finding's ref;
 * - unclassified: in suspense with no live classification; classified: moved out by a person.
 */

export interface SuspenseItem {
  /** The rule-9 entry (the item's id). */
  entryId: bigint;
  storeId: string;
  /** `<chain id>:<tx hash>:<log index>`. */
  transferId: string;
  chainId: number;
  txHash: string;
  logIndex: number;
  /** The watched wallet the money came into (or left), lowercase, and its role. */
  wallet: string;
  walletRole: string;
  token: Token;
  direction: SuspenseDirection;
  /** Base units, positive. */
  amount: bigint;
  /** Block time of the transfer. */
  occurredAt: Date;
  /** The item's latest `unmatched_transfer_in` finding (open or resolved), if any. */
  findingId: string | null;
  /** The entry's metadata as rule 9 wrote it (the transfer's details). */
  metadata: Record<string, unknown>;
  classification: LiveClassification | null;
}

export interface LiveClassification {
  id: bigint;
  classification: SuspenseClassification;
  note: string;
  classifiedBy: string;
  classifiedAt: Date;
  /** The `suspense.classified` entry. */
  entryId: bigint;
}

type ItemRow = {
  entry_id: string;
  store_id: string;
  ref_id: string;
  occurred_at: Date | string;
  metadata: Record<string, unknown>;
  chain_id: string;
  token: string;
  symbol: string;
  decimals: number;
  amount: string;
  finding_id: string | null;
  c_id: string | null;
  c_classification: SuspenseClassification | null;
  c_note: string | null;
  c_by: string | null;
  c_at: Date | string | null;
  c_entry_id: string | null;
};

/**
 * The rule-9 entries still in suspense, as rows of `e` (the entry), `a` (its suspense account), `p`
 * (its suspense posting) and `c` (its live classification, if any): not reversed, and not cleared
 * by a payment return (the arrival's row was given the intent whose return is booked:
 * src/settlement/paymentReturns.ts).
 */
function inSuspense(where: SQL): SQL {
  return sql`
    from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id and a.code like 'assets:suspense:%'
    left join suspense_classifications c on c.suspense_entry_id = e.id and c.reversed_at is null
    where e.kind = 'chain.transfer_in_unmatched'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
      and not exists (
        select 1 from chain_transfers t
        join chain_transfers rt on rt.matched_as like '%payment_returned%' and rt.matched_ref = t.matched_ref
          and rt.state <> 'orphaned' and rt.chain_id = t.chain_id and rt.from_address = t.to_address
          and rt.to_address = t.from_address and rt.token = t.token and rt.value = t.value
        where t.chain_id = (e.metadata->>'chain_id')::bigint and t.tx_hash = e.metadata->>'tx_hash'
          and t.log_index = (e.metadata->>'log_index')::int and t.block_hash = e.metadata->>'block_hash'
          and t.matched_ref is not null)
      and ${where}`;
}

async function readItems(tx: DbExecutor, where: SQL): Promise<SuspenseItem[]> {
  const { rows } = await tx.execute<ItemRow>(sql`
    select e.id::text as entry_id, e.store_id, e.ref_id, e.occurred_at, e.metadata,
           a.chain_id::text, a.token, a.symbol, a.decimals, p.amount::text as amount,
           (select f.id::text from findings f
            where f.kind = 'unmatched_transfer_in' and f.ref_type = e.ref_type and f.ref_id = e.ref_id
            order by f.resolved_at is null desc, f.id desc limit 1) as finding_id,
           c.id::text as c_id, c.classification as c_classification, c.note as c_note,
           c.classified_by as c_by, c.classified_at as c_at, c.entry_id::text as c_entry_id
    ${inSuspense(where)}
    order by e.occurred_at, e.id`);
  return rows.map(toItem);
}

function toItem(r: ItemRow): SuspenseItem {
  const posted = BigInt(r.amount);
  const meta = r.metadata;
  return {
    entryId: BigInt(r.entry_id),
    storeId: r.store_id,
    transferId: r.ref_id,
    chainId: Number(r.chain_id),
    txHash: String(meta.tx_hash ?? ''),
    logIndex: Number(meta.log_index ?? -1),
    wallet: String(meta.wallet ?? ''),
    walletRole: String(meta.wallet_role ?? ''),
    token: {
      chainId: Number(r.chain_id),
      address: r.token as `0x${string}`,
      symbol: r.symbol,
      decimals: r.decimals,
    },
    // Rule 9 credits suspense for money in: a credit (negative) posting is money in.
    direction: posted < 0n ? 'in' : 'out',
    amount: posted < 0n ? -posted : posted,
    occurredAt: new Date(r.occurred_at),
    findingId: r.finding_id,
    metadata: meta,
    classification:
      r.c_id === null
        ? null
        : {
            id: BigInt(r.c_id),
            classification: r.c_classification as SuspenseClassification,
            note: r.c_note ?? '',
            classifiedBy: r.c_by ?? '',
            classifiedAt: new Date(r.c_at as Date | string),
            entryId: BigInt(r.c_entry_id as string),
          },
  };
}

export interface SuspenseListFilter {
  storeId?: string;
  /** Also the classified items (default: only the unclassified). */
  all?: boolean;
}

/** The items in suspense, oldest first: `stablebooks suspense list`. */
export function listSuspenseItems(tx: DbExecutor, filter: SuspenseListFilter = {}): Promise<SuspenseItem[]> {
  const store = filter.storeId === undefined ? sql`true` : sql`e.store_id = ${filter.storeId}`;
  const state = filter.all ? sql`true` : sql`c.id is null`;
  return readItems(tx, sql`${store} and ${state}`);
}

/** One item by its entry id, or null when that entry is not (or no longer) in suspense. */
export async function suspenseItemByEntry(tx: DbExecutor, entryId: bigint): Promise<SuspenseItem | null> {
  const [item] = await readItems(tx, sql`e.id = ${entryId.toString()}::bigint`);
  return item ?? null;
}

const TX_HASH = '(0x[0-9a-fA-F]{64})';
const TRANSFER_ID = new RegExp(`^(\\d{1,12}):${TX_HASH}:(\\d{1,9})$`);
const TX_AND_LOG = new RegExp(`^${TX_HASH}:(\\d{1,9})$`);
const TX_ONLY = new RegExp(`^${TX_HASH}$`);

/** The filter of entries a name can mean, or null when it is no name of an item. */
function referenceFilter(text: string): SQL | null {
  if (/^\d{1,18}$/.test(text)) return sql`e.id = ${text}::bigint`;
  const id = text.match(TRANSFER_ID);
  if (id) return sql`e.ref_id = ${`${id[1]}:${id[2]?.toLowerCase()}:${Number(id[3])}`}`;
  const txLog = text.match(TX_AND_LOG);
  if (txLog)
    return sql`e.metadata->>'tx_hash' = ${txLog[1]?.toLowerCase()} and (e.metadata->>'log_index')::int = ${Number(txLog[2])}`;
  const tx = text.match(TX_ONLY);
  if (tx) return sql`e.metadata->>'tx_hash' = ${tx[1]?.toLowerCase()}`;
  return null;
}

/**
 * The item a person names: its entry id (digits), its transfer id `<chain id>:<tx hash>:<log
 * index>`, `<tx hash>:<log index>`, or a tx hash alone when one item has it. A name that matches
 * no item, or several, is a SuspenseItemError (one line, nothing changed).
 */
export async function findSuspenseItem(tx: DbExecutor, name: string): Promise<SuspenseItem> {
  const text = name.trim();
  const where = referenceFilter(text);
  if (where === null) {
    throw new SuspenseItemError(
      'bad_reference',
      `${JSON.stringify(name)} names no suspense item: give its entry id, <chain id>:<tx hash>:<log index>, <tx hash>:<log index> or a tx hash`,
    );
  }
  const items = await readItems(tx, where);
  const [only] = items;
  if (!only)
    throw new SuspenseItemError(
      'not_found',
      `no item in suspense matches ${JSON.stringify(text)} (see stablebooks suspense list --all)`,
    );
  if (items.length > 1)
    throw new SuspenseItemError(
      'ambiguous',
      `${JSON.stringify(text)} matches ${items.length} items in suspense (${items
        .map((i) => `${i.transferId}, entry ${i.entryId}`)
        .join('; ')}): name one by <chain id>:<tx hash>:<log index> or entry id`,
    );
  return only;
}

/** Per store, chain and token: how many items and how much (token units), for the report. */
export interface SuspenseTotalRow {
  storeId: string;
  chainId: number;
  symbol: string;
  token: string;
  decimals: number;
  /** null for the unclassified items. */
  classification: SuspenseClassification | null;
  count: number;
  /** Base units, positive: the items' values. */
  amount: bigint;
}

/**
 * The report's suspense block: the items that arrived before `before`, in suspense now, summed
 * per store, chain, token and classification (null: unclassified), in the caller's snapshot.
 */
export async function suspenseTotals(
  tx: DbExecutor,
  options: { storeId: string | null; before: Date },
): Promise<SuspenseTotalRow[]> {
  const store = options.storeId === null ? sql`true` : sql`e.store_id = ${options.storeId}`;
  const { rows } = await tx.execute<{
    store_id: string;
    chain_id: string;
    symbol: string;
    token: string;
    decimals: number;
    classification: SuspenseClassification | null;
    n: string;
    amount: string;
  }>(sql`
    select e.store_id, a.chain_id::text, a.symbol, a.token, a.decimals, c.classification,
           count(*)::text as n, abs(sum(p.amount))::text as amount
    ${inSuspense(sql`${store} and e.occurred_at < ${options.before.toISOString()}::timestamptz`)}
    group by e.store_id, a.chain_id, a.symbol, a.token, a.decimals, c.classification
    order by c.classification nulls first, e.store_id, a.chain_id, a.symbol`);
  return rows.map((r) => ({
    storeId: r.store_id,
    chainId: Number(r.chain_id),
    symbol: r.symbol,
    token: r.token,
    decimals: r.decimals,
    classification: r.classification,
    count: Number(r.n),
    amount: BigInt(r.amount),
  }));
}
