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

export interface SealPosting {
  id: string;
  account_id: string;
  account: string;
  asset: string;
  amount: string;
  occurred_at: string;
  tx_id: string;
}

/** The hash of seal 1's predecessor. */
export const GENESIS_HASH = '0'.repeat(64);

/** sha256 over the previous seal's hash and the entry's canonical content (contentHash's canonical JSON). */
export function sealHash(prevHash: string, entry: SealContent): string {
  return contentHash({ prev_hash: prevHash, entry });
}

const utc = (column: SQL) => sql`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The content of the given entries, in the order of `ids`; an id with no entry is absent from the map. */
export async function readSealContents(
  db: DbExecutor,
  ids: readonly bigint[],
): Promise<Map<string, SealContent>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.execute<Omit<SealContent, 'postings'> & { postings: SealPosting[] | null }>(sql`
    select e.id::text, e.tx_id::text, e.idempotency_key, e.kind, ${utc(sql`e.occurred_at`)} as occurred_at,
           ${utc(sql`e.recorded_at`)} as recorded_at, e.store_id, e.ref_type, e.ref_id,
           e.reverses_entry_id::text, e.memo, e.metadata::text as metadata, e.content_hash,
           (select json_agg(json_build_object(
                     'id', p.id::text, 'account_id', p.account_id::text, 'account', a.code, 'asset', p.asset,
                     'amount', p.amount::text, 'occurred_at', ${utc(sql`p.occurred_at`)}, 'tx_id', p.tx_id::text)
                   order by p.id)
              from ledger_postings p left join ledger_accounts a on a.id = p.account_id
             where p.entry_id = e.id) as postings
    from ledger_entries e
    where e.id = any(${`{${ids.join(',')}}`}::bigint[])`);
  return new Map(rows.map((r) => [r.id, { ...r, postings: r.postings ?? [] }]));
}
