import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';

/**
 * A point of the entries' hash chain: seal `seq` (so `seq` entries are sealed, seal numbers have no
 * gap), its hash, and its entry. Published in every reconciliation report; `stablebooks ledger
 * verify --head SEQ:HASH` recomputes the chain up to `seq` and compares.
 */
export interface ChainHead {
  seq: bigint;
  hash: string;
  entryId: bigint;
  sealedAt: Date;
}

/** The last seal now (or at the caller's snapshot). */
export async function chainHead(db: DbExecutor): Promise<ChainHead | null> {
  return readHead(db, sql`true`);
}

/**
 * The last seal written before `at` (by sealed_at, the sealing transaction's start): every entry
 * it covers was committed before `at`, and the chain up to it could be published then.
 */
export async function chainHeadAt(db: DbExecutor, at: Date): Promise<ChainHead | null> {
  return readHead(db, sql`l.sealed_at < ${at.toISOString()}::timestamptz`);
}

// Every column through the alias `l`: an ORDER BY on a bare `seq` would sort the text output
// column of that name ('9' after '28'), not the bigint.
async function readHead(db: DbExecutor, where: SQL): Promise<ChainHead | null> {
  const { rows } = await db.execute<{ seq: string; hash: string; entry_id: string; sealed_at: Date }>(sql`
    select l.seq::text, l.hash, l.entry_id::text, l.sealed_at from ledger_seals l where ${where}
    order by l.seq desc limit 1`);
  const r = rows[0];
  return r
    ? { seq: BigInt(r.seq), hash: r.hash, entryId: BigInt(r.entry_id), sealedAt: new Date(r.sealed_at) }
    : null;
}

/** `SEQ:HASH`, as a report prints a head and `ledger verify --head` reads it. */
export function formatChainHead(head: Pick<ChainHead, 'seq' | 'hash'>): string {
  return `${head.seq}:${head.hash}`;
}
