import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { toJsonb } from '../db/storableJson.ts';
import { accountCode, assetOf } from './accounts.ts';
import { contentHash } from './contentHash.ts';
import { type AccountCache, ensureAccounts, type ResolvedAccount } from './ensureAccounts.ts';
import type { EntryDraft } from './entryDraft.ts';
import {
  AccountDecimalsError,
  EntryNotFoundError,
  IdempotencyConflictError,
  InvalidEntryError,
} from './errors.ts';

export interface PostedEntry {
  id: bigint;
  /** false when the key had already been posted with the same content (an idempotent replay). */
  created: boolean;
}

type PostingRow = {
  account_id: string;
  asset: string;
  amount: string;
};

interface EntryHeader {
  idempotencyKey: string;
  kind: string;
  occurredAt: Date;
  storeId: string;
  ref: { type: string; id: string };
  reversesEntryId: bigint | null;
  memo: string | null;
  metadata: Record<string, unknown>;
  hash: string;
}

/**
 * Writes one entry and its postings inside the caller's transaction, so a fact and the entry it
 * causes commit together. Exactly once per idempotency key: the same key with the same content
 * returns the existing entry; with different content it is an IdempotencyConflictError. A line in
 * a token whose decimals are not its account's is an AccountDecimalsError, thrown before the entry
 * or a posting is written (checked from the account cache when the account is cached). The
 * database checks balance, immutability and assets again at commit (migrations/0001).
 */
export async function postEntry(
  tx: DbExecutor,
  draft: EntryDraft,
  options: { accounts?: AccountCache } = {},
): Promise<PostedEntry> {
  checkDraft(draft);
  const accounts = await ensureAccounts(
    tx,
    draft.lines.map((l) => l.account),
    options.accounts,
  );
  const { header, postings } = prepareEntry(draft, accounts);
  return insertEntry(tx, header, postings);
}

/**
 * Writes several entries and their postings inside the caller's transaction in one round trip
 * (one account statement when an account is not cached, one insert for every entry): what
 * postEntry does for each draft, in order, with the same checks, idempotency and errors, for a
 * caller that books many facts in one transaction. Results are in the drafts' order. A key
 * already posted (by an earlier transaction or earlier in this call) with the same content is a
 * replay; with other content an IdempotencyConflictError, and nothing of the call is kept once
 * the caller's transaction rolls back. Each entry is still checked by the database at commit.
 */
export async function postEntries(
  tx: DbExecutor,
  drafts: readonly EntryDraft[],
  options: { accounts?: AccountCache } = {},
): Promise<PostedEntry[]> {
  // One draft, or a key twice in the call (the second a replay of the first, or a conflict):
  // postEntry one by one, which gives exactly those answers.
  if (drafts.length < 2 || new Set(drafts.map((d) => d.idempotencyKey)).size < drafts.length) {
    const posted: PostedEntry[] = [];
    for (const draft of drafts) posted.push(await postEntry(tx, draft, options));
    return posted;
  }
  for (const draft of drafts) checkDraft(draft);
  const accounts = await ensureAccounts(
    tx,
    drafts.flatMap((d) => d.lines.map((l) => l.account)),
    options.accounts,
  );
  const prepared = drafts.map((draft) => prepareEntry(draft, accounts));
  const entries = JSON.stringify(
    prepared.map(({ header }, n) => ({
      n,
      idempotency_key: header.idempotencyKey,
      kind: header.kind,
      occurred_at: header.occurredAt.toISOString(),
      store_id: header.storeId,
      ref_type: header.ref.type,
      ref_id: header.ref.id,
      memo: header.memo,
      content_hash: header.hash,
    })),
  );
  // The metadata as postEntry stores it (toJsonb), entry n's at index n.
  const metadata = `[${prepared.map(({ header }) => toJsonb(header.metadata)).join(',')}]`;
  let i = 0;
  const postings = JSON.stringify(
    prepared.flatMap(({ postings: rows }, n) => rows.map((row) => ({ i: i++, n, ...row }))),
  );
  // One round trip: every entry and every posting, in the drafts' order (entry ids, and posting ids
  // within an entry, as postEntry would have given them one by one). A key taken before inserts
  // nothing here and is looked up below, as postEntry does.
  const inserted = await executePrepared<{ id: string; n: number }>(
    tx,
    sql`
    with x as (
      select * from jsonb_to_recordset(${entries}::jsonb)
        as x(n int, idempotency_key text, kind text, occurred_at timestamptz, store_id text, ref_type text,
             ref_id text, memo text, content_hash text)
    ), e as (
      insert into ledger_entries
        (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, memo, metadata, content_hash)
      select idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, memo,
             ${metadata}::jsonb -> n, content_hash
      from x order by n
      on conflict do nothing
      returning id, idempotency_key, occurred_at
    ), p as (
      insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
      select e.id, y.account_id, y.asset, y.amount::numeric, e.occurred_at
      from jsonb_to_recordset(${postings}::jsonb) as y(i int, n int, account_id bigint, asset text, amount text)
      join x on x.n = y.n
      join e on e.idempotency_key = x.idempotency_key
      order by y.i
      returning 1
    )
    select e.id::text, x.n from e join x on x.idempotency_key = e.idempotency_key`,
  );
  const ids = new Map<number, bigint>();
  for (const row of inserted.rows) ids.set(Number(row.n), BigInt(row.id));
  const results: PostedEntry[] = [];
  for (const [n, { header }] of prepared.entries()) {
    const id = ids.get(n);
    results.push(id === undefined ? await existingEntry(tx, header) : { id, created: true });
  }
  return results;
}

/** The entry's row and postings as the database takes them; refuses an account of another asset or decimals. */
function prepareEntry(
  draft: EntryDraft,
  accounts: Map<string, ResolvedAccount>,
): { header: EntryHeader; postings: PostingRow[] } {
  const postings: PostingRow[] = draft.lines.map((line) => {
    const code = accountCode(line.account);
    const resolved = accounts.get(code);
    if (!resolved) throw new Error(`ledger: account ${code} was not resolved`);
    if (resolved.asset !== assetOf(line.account.token)) {
      throw new InvalidEntryError(
        `ledger: account ${code} exists for asset ${resolved.asset}, not ${assetOf(line.account.token)}; two tokens share a symbol on one chain`,
      );
    }
    // An amount is base units of the token's decimals; the account counts in the decimals it was
    // created with. They differ only when the registry changed (CHAINS_FILE): refuse, write nothing.
    if (resolved.decimals !== line.account.token.decimals) {
      throw new AccountDecimalsError(code, resolved.decimals, line.account.token.decimals, resolved.asset);
    }
    return { account_id: resolved.id.toString(), asset: resolved.asset, amount: line.amount.toString() };
  });
  const metadata = draft.metadata ?? {};
  const hash = contentHash({
    kind: draft.kind,
    occurredAt: draft.occurredAt,
    storeId: draft.storeId,
    ref: draft.ref,
    memo: draft.memo ?? null,
    metadata,
    lines: draft.lines
      .map((l) => [accountCode(l.account), assetOf(l.account.token), l.amount.toString()])
      .sort((a, b) => (a.join('|') < b.join('|') ? -1 : 1)),
  });
  return {
    header: {
      idempotencyKey: draft.idempotencyKey,
      kind: draft.kind,
      occurredAt: draft.occurredAt,
      storeId: draft.storeId,
      ref: draft.ref,
      reversesEntryId: null,
      memo: draft.memo ?? null,
      metadata,
      hash,
    },
    postings,
  };
}

/**
 * Writes the mirror of an entry (every amount negated), linked by reverses_entry_id, at most
 * once: reversing an entry that already has a reversal returns that reversal.
 */
export async function reverseEntry(
  tx: DbExecutor,
  entryId: bigint,
  reason: string,
  options: { occurredAt?: Date } = {},
): Promise<PostedEntry> {
  const existing = await tx.execute<{ id: string }>(
    sql`select id::text from ledger_entries where reverses_entry_id = ${entryId.toString()}::bigint`,
  );
  if (existing.rows[0]) return { id: BigInt(existing.rows[0].id), created: false };

  const original = await tx.execute<{
    idempotency_key: string;
    kind: string;
    occurred_at: Date;
    store_id: string;
    ref_type: string;
    ref_id: string;
  }>(sql`select idempotency_key, kind, occurred_at, store_id, ref_type, ref_id
         from ledger_entries where id = ${entryId.toString()}::bigint`);
  const entry = original.rows[0];
  if (!entry) throw new EntryNotFoundError(`ledger: cannot reverse entry ${entryId}: no such entry`);
  const lines = await tx.execute<PostingRow>(sql`
    select account_id::text, asset, (-amount)::text as amount
    from ledger_postings where entry_id = ${entryId.toString()}::bigint order by id`);
  const occurredAt = options.occurredAt ?? new Date(entry.occurred_at);
  const key = `reversal:${entry.idempotency_key}`;
  return insertEntry(
    tx,
    {
      idempotencyKey: key,
      kind: `${entry.kind}.reversal`,
      occurredAt,
      storeId: entry.store_id,
      ref: { type: entry.ref_type, id: entry.ref_id },
      reversesEntryId: entryId,
      memo: reason,
      metadata: { reverses_kind: entry.kind },
      // A reversal's content is fixed by the entry it reverses; the reason is commentary.
      hash: contentHash({ reverses: entryId, key }),
    },
    lines.rows,
  );
}

async function insertEntry(
  tx: DbExecutor,
  header: EntryHeader,
  postings: PostingRow[],
): Promise<PostedEntry> {
  // One round trip: the entry and its postings in a single statement (BASELINES: round trips
  // dominate posting cost). ON CONFLICT DO NOTHING waits for a concurrent insert of the same key.
  const inserted = await executePrepared<{ id: string }>(
    tx,
    sql`
    with e as (
      insert into ledger_entries
        (idempotency_key, kind, occurred_at, store_id, ref_type, ref_id, reverses_entry_id, memo, metadata, content_hash)
      values (${header.idempotencyKey}, ${header.kind}, ${header.occurredAt.toISOString()}::timestamptz, ${header.storeId},
              ${header.ref.type}, ${header.ref.id}, ${header.reversesEntryId?.toString() ?? null}::bigint, ${header.memo},
              ${toJsonb(header.metadata)}::jsonb,
              ${header.hash})
      on conflict do nothing
      returning id
    ), p as (
      insert into ledger_postings (entry_id, account_id, asset, amount, occurred_at)
      select e.id, x.account_id, x.asset, x.amount::numeric, ${header.occurredAt.toISOString()}::timestamptz
      from e, jsonb_to_recordset(${JSON.stringify(postings)}::jsonb) as x(account_id bigint, asset text, amount text)
      returning 1
    )
    select id::text from e`,
  );
  const row = inserted.rows[0];
  if (row) return { id: BigInt(row.id), created: true };
  return existingEntry(tx, header);
}

/** Nothing inserted: the key (or, for a reversal, the reversed entry) is already taken. */
async function existingEntry(tx: DbExecutor, header: EntryHeader): Promise<PostedEntry> {
  const found = await tx.execute<{ id: string; content_hash: string }>(sql`
    select id::text, content_hash from ledger_entries
    where idempotency_key = ${header.idempotencyKey}
       or (${header.reversesEntryId?.toString() ?? null}::bigint is not null
           and reverses_entry_id = ${header.reversesEntryId?.toString() ?? null}::bigint)
    limit 1`);
  const existing = found.rows[0];
  if (!existing) throw new Error(`ledger: entry ${header.idempotencyKey} neither inserted nor found`);
  if (header.reversesEntryId !== null) return { id: BigInt(existing.id), created: false };
  if (existing.content_hash !== header.hash)
    throw new IdempotencyConflictError(header.idempotencyKey, BigInt(existing.id));
  return { id: BigInt(existing.id), created: false };
}

/** The application's own check, for a clear error before the database's commit-time one. */
function checkDraft(draft: EntryDraft): void {
  const problems: string[] = [];
  if (draft.lines.length < 2) problems.push(`has ${draft.lines.length} line(s); an entry needs at least two`);
  const sums = new Map<string, bigint>();
  for (const line of draft.lines) {
    if (line.amount === 0n) problems.push(`has a zero line on ${accountCode(line.account)}`);
    const asset = assetOf(line.account.token);
    sums.set(asset, (sums.get(asset) ?? 0n) + line.amount);
  }
  for (const [asset, sum] of sums)
    if (sum !== 0n) problems.push(`does not balance: asset ${asset} sums to ${sum}`);
  if (!draft.idempotencyKey) problems.push('has no idempotency key');
  if (Number.isNaN(draft.occurredAt.getTime())) problems.push('has an invalid occurredAt');
  if (problems.length > 0)
    throw new InvalidEntryError(`ledger: entry ${draft.idempotencyKey} ${problems.join('; ')}`);
}
