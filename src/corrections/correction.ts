import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/** A row of `corrections` with its token, as listed and reported. */
export interface Correction {
  id: bigint;
  findingId: bigint;
  findingKind: string;
  /** The intent the finding names. */
  refId: string;
  entryId: bigint;
  storeId: string;
  chainId: number;
  symbol: string;
  decimals: number;
  fromAccount: string;
  toAccount: string;
  /** Base units, positive. */
  amount: bigint;
  note: string;
  madeBy: string;
  madeAt: Date;
  undoneAt: Date | null;
  undoneBy: string | null;
  undoNote: string | null;
}

type Row = {
  id: string;
  finding_id: string;
  finding_kind: string;
  ref_id: string;
  entry_id: string;
  store_id: string;
  chain_id: string;
  symbol: string;
  decimals: number;
  from_account: string;
  to_account: string;
  amount: string;
  note: string;
  made_by: string;
  made_at: Date | string;
  undone_at: Date | string | null;
  undone_by: string | null;
  undo_note: string | null;
};

/** The corrections `where` selects (over `c`, the corrections row), oldest first. */
export async function readCorrections(tx: DbExecutor, where: SQL, lock = false): Promise<Correction[]> {
  const { rows } = await tx.execute<Row>(sql`
    select c.id::text, c.finding_id::text, f.kind as finding_kind, f.ref_id, c.entry_id::text, c.store_id,
           a.chain_id::text, a.symbol, a.decimals, c.from_account, c.to_account, c.amount::text,
           c.note, c.made_by, c.made_at, c.undone_at, c.undone_by, c.undo_note
      from corrections c
      join findings f on f.id = c.finding_id
      join lateral (
        select a.chain_id, a.symbol, a.decimals from ledger_postings p
          join ledger_accounts a on a.id = p.account_id
         where p.entry_id = c.entry_id order by p.id limit 1) a on true
     where ${where}
     order by c.id
     ${lock ? sql`for update of c` : sql``}`);
  return rows.map((r) => ({
    id: BigInt(r.id),
    findingId: BigInt(r.finding_id),
    findingKind: r.finding_kind,
    refId: r.ref_id,
    entryId: BigInt(r.entry_id),
    storeId: r.store_id,
    chainId: Number(r.chain_id),
    symbol: r.symbol,
    decimals: r.decimals,
    fromAccount: r.from_account,
    toAccount: r.to_account,
    amount: BigInt(r.amount),
    note: r.note,
    madeBy: r.made_by,
    madeAt: new Date(r.made_at),
    undoneAt: r.undone_at === null ? null : new Date(r.undone_at),
    undoneBy: r.undone_by,
    undoNote: r.undo_note,
  }));
}

/** Every correction, oldest first: `stablebooks adjust list`. */
export function listCorrections(tx: DbExecutor, filter: { storeId?: string } = {}): Promise<Correction[]> {
  return readCorrections(tx, filter.storeId === undefined ? sql`true` : sql`c.store_id = ${filter.storeId}`);
}

/**
 * The report's corrections block: those made or undone in [from, to), in the caller's snapshot.
 * A correction made before the period and undone in it is listed too: its undoing moved money.
 */
export function correctionsInPeriod(
  tx: DbExecutor,
  options: { storeId: string | null; from: Date; to: Date },
): Promise<Correction[]> {
  const from = options.from.toISOString();
  const to = options.to.toISOString();
  const store = options.storeId === null ? sql`true` : sql`c.store_id = ${options.storeId}`;
  return readCorrections(
    tx,
    sql`${store} and ((c.made_at >= ${from}::timestamptz and c.made_at < ${to}::timestamptz)
        or (c.undone_at >= ${from}::timestamptz and c.undone_at < ${to}::timestamptz))`,
  );
}
