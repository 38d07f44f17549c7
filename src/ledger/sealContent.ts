import { type SQL, sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { contentHash } from './contentHash.ts';

/**
 * What one seal of the hash chain covers (docs/accounting.md, "The entries' hash chain"): every
 * column of the entry and of each of its postings, in posting-id order, each account by its code
 * (the stable key people read) beside its id. Read as text in PostgreSQL, so nothing passes through
 * a JavaScript number or Date: amounts are decimal strings, times carry their microseconds, and
 * metadata is the jsonb's own text (keys in jsonb's order, numbers exact). tx_id is covered too:
 * an UPDATE, even one that writes the same values back, gives the row its own transaction's id
 * (the CHECK of migrations/0010), so any rewrite changes the hash.
 */
export interface SealContent {
  id: string;
  tx_id: string;
  idempotency_key: string;
  kind: string;
  occurred_at: string;
  recorded_at: string;
  store_id: string;
  ref_type: string;
  ref_id: string;
  reverses_entry_id: string | null;
  memo: string | null;
  metadata: string;
  content_hash: string;
  postings: SealPosting[];
}

export type SealPosting = {
  id: string;
  account_id: string;
  account: string;
  asset: string;
  amount: string;
  occurred_at: string;
  tx_id: string;
};

/** The hash of seal 1's predecessor. */
export const GENESIS_HASH = '0'.repeat(64);

/** sha256 over the previous seal's hash and the entry's canonical content (contentHash's canonical JSON). */
export function sealHash(prevHash: string, entry: SealContent): string {
  return contentHash({ prev_hash: prevHash, entry });
}

const utc = (column: SQL) => sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The content of the given entries; an id with no entry is absent from the map. Two plain
 * queries assembled here: one correlated json_agg per entry read ~8x slower (measured, 20k entries).
 */
export async function readSealContents(
  db: DbExecutor,
  ids: readonly bigint[],
): Promise<Map<string, SealContent>> {
  if (ids.length === 0) return new Map();
  const list = `{${ids.join(',')}}`;
  const entries = await db.execute<Omit<SealContent, 'postings'>>(sql`
    select e.id::text, e.tx_id::text, e.idempotency_key, e.kind, ${utc(sql`e.occurred_at`)} as occurred_at,
           ${utc(sql`e.recorded_at`)} as recorded_at, e.store_id, e.ref_type, e.ref_id,
           e.reverses_entry_id::text, e.memo, e.metadata::text as metadata, e.content_hash
    from ledger_entries e
    where e.id = any(${list}::bigint[])`);
  // A left join: a posting whose account row is gone still counts, with a null code.
  const postings = await db.execute<SealPosting & { entry_id: string }>(sql`
    select p.entry_id::text, p.id::text, p.account_id::text, a.code as account, p.asset, p.amount::text,
           ${utc(sql`p.occurred_at`)} as occurred_at, p.tx_id::text
    from ledger_postings p left join ledger_accounts a on a.id = p.account_id
    where p.entry_id = any(${list}::bigint[])
    order by p.entry_id, p.id`);
  const byEntry = new Map<string, SealPosting[]>();
  for (const { entry_id, ...posting } of postings.rows) {
    const of = byEntry.get(entry_id);
    if (of) of.push(posting);
    else byEntry.set(entry_id, [posting]);
  }
  return new Map(entries.rows.map((e) => [e.id, { ...e, postings: byEntry.get(e.id) ?? [] }]));
}
