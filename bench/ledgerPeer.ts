/**
 * The ledger peer of bench/ledger.ts (issue 33): the design of the best-known PostgreSQL ledgers
 * (pgledger's create_transfer is the model), written here from its description, so that our
 * posting and the peer's are measured on the same server in the same run.
 *
 * The peer keeps a balance per account and moves money by transfers. One call of
 * peer.create_transfers:
 * - locks every account row the call touches, in id order (two calls never wait on each other in
 *   a cycle, so no deadlock), and holds the locks to the end of the transaction;
 * - per transfer: updates the source account (balance - amount, version + 1) and the destination
 *   (balance + amount, version + 1), refuses a balance the account does not allow and a transfer
 *   between two assets, inserts the transfer row and two entry rows that each store the account's
 *   previous balance, current balance and version.
 * It lives in its own schema, `peer`, in the bench's database, created by the bench.
 *
 * What is compared: the same checkout-like entries (the lines of docs/accounting.md's rule 1 on
 * the same accounts, amounts in base units as numeric(78,0)). Our entry is one row in
 * ledger_entries and one posting per line; the peer's is the transfers that make the same
 * movement (a credit line's account to a debit line's, per asset: 2 transfers for a 3-line entry,
 * 3 for a 4-line one), in one call, so it touches the same accounts with the same amounts. The
 * peer is given its best case where the two designs differ: bigint ids (pgledger generates text
 * ULIDs in plpgsql), one round trip per transaction whatever the batch (one call with every
 * transfer of the batch; ours sends one statement per entry), and no idempotency key, content hash,
 * hash-chain column or per-store check (ours has all four).
 */
import { sql } from 'drizzle-orm';
import type { Db, DbExecutor } from '../src/db/database.ts';
import { executePrepared } from '../src/db/executePrepared.ts';
import { accountCode, assetOf } from '../src/ledger/accounts.ts';
import type { EntryDraft } from '../src/ledger/entryDraft.ts';

/** The peer's schema and function; idempotent, so a reused DATABASE_URL gets it once. */
export const PEER_SCHEMA = `
CREATE SCHEMA IF NOT EXISTS peer;

CREATE TABLE IF NOT EXISTS peer.accounts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  code text NOT NULL UNIQUE,
  asset text NOT NULL,
  balance numeric(78,0) NOT NULL DEFAULT 0,
  version bigint NOT NULL DEFAULT 0,
  allow_negative_balance boolean NOT NULL DEFAULT true,
  allow_positive_balance boolean NOT NULL DEFAULT true,
  metadata jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS peer.transfers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  from_account_id bigint NOT NULL REFERENCES peer.accounts (id),
  to_account_id bigint NOT NULL REFERENCES peer.accounts (id),
  amount numeric(78,0) NOT NULL,
  created_at timestamptz NOT NULL,
  event_at timestamptz NOT NULL,
  metadata jsonb,
  CHECK (amount > 0 AND from_account_id <> to_account_id)
);
CREATE INDEX IF NOT EXISTS peer_transfers_from_idx ON peer.transfers (from_account_id);
CREATE INDEX IF NOT EXISTS peer_transfers_to_idx ON peer.transfers (to_account_id);
CREATE INDEX IF NOT EXISTS peer_transfers_event_at_idx ON peer.transfers (event_at);

CREATE TABLE IF NOT EXISTS peer.entries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES peer.accounts (id),
  transfer_id bigint NOT NULL REFERENCES peer.transfers (id),
  amount numeric(78,0) NOT NULL,
  account_previous_balance numeric(78,0) NOT NULL,
  account_current_balance numeric(78,0) NOT NULL,
  account_version bigint NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS peer_entries_account_idx ON peer.entries (account_id);
CREATE INDEX IF NOT EXISTS peer_entries_transfer_idx ON peer.entries (transfer_id);

-- Transfer i moves amounts[i] from from_ids[i] to to_ids[i]; it belongs to entry entry_of[i]
-- (1-based), whose metadata is metadata->(entry_of[i] - 1) and whose time is event_at[entry_of[i]].
CREATE OR REPLACE FUNCTION peer.create_transfers(
  from_ids bigint[], to_ids bigint[], amounts numeric[], entry_of int[], metadata jsonb, event_at timestamptz[]
) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  n int := coalesce(array_length(from_ids, 1), 0);
  src peer.accounts;
  dst peer.accounts;
  transfer bigint;
  ids bigint[] := '{}';
BEGIN
  IF n = 0 OR array_length(to_ids, 1) <> n OR array_length(amounts, 1) <> n OR array_length(entry_of, 1) <> n THEN
    RAISE EXCEPTION 'peer: % transfer(s) with % destinations, % amounts, % entries',
      n, array_length(to_ids, 1), array_length(amounts, 1), array_length(entry_of, 1);
  END IF;
  -- Every account of the call, locked in id order (ORDER BY sorts before the rows are locked).
  PERFORM 1 FROM peer.accounts WHERE id = ANY (from_ids || to_ids) ORDER BY id FOR UPDATE;
  FOR i IN 1 .. n LOOP
    IF amounts[i] <= 0 THEN
      RAISE EXCEPTION 'peer: amount % must be positive', amounts[i];
    END IF;
    IF from_ids[i] = to_ids[i] THEN
      RAISE EXCEPTION 'peer: cannot transfer to the same account (%)', from_ids[i];
    END IF;
    UPDATE peer.accounts SET balance = balance - amounts[i], version = version + 1, updated_at = now()
      WHERE id = from_ids[i] RETURNING * INTO src;
    IF NOT FOUND THEN RAISE EXCEPTION 'peer: no account %', from_ids[i]; END IF;
    IF (NOT src.allow_negative_balance AND src.balance < 0) OR (NOT src.allow_positive_balance AND src.balance > 0) THEN
      RAISE EXCEPTION 'peer: account % does not allow balance %', src.id, src.balance;
    END IF;
    UPDATE peer.accounts SET balance = balance + amounts[i], version = version + 1, updated_at = now()
      WHERE id = to_ids[i] RETURNING * INTO dst;
    IF NOT FOUND THEN RAISE EXCEPTION 'peer: no account %', to_ids[i]; END IF;
    IF (NOT dst.allow_negative_balance AND dst.balance < 0) OR (NOT dst.allow_positive_balance AND dst.balance > 0) THEN
      RAISE EXCEPTION 'peer: account % does not allow balance %', dst.id, dst.balance;
    END IF;
    IF src.asset <> dst.asset THEN
      RAISE EXCEPTION 'peer: cannot transfer between assets % and %', src.asset, dst.asset;
    END IF;
    INSERT INTO peer.transfers (from_account_id, to_account_id, amount, created_at, event_at, metadata)
      VALUES (src.id, dst.id, amounts[i], now(), event_at[entry_of[i]], metadata -> (entry_of[i] - 1))
      RETURNING id INTO transfer;
    INSERT INTO peer.entries
        (account_id, transfer_id, amount, account_previous_balance, account_current_balance, account_version, created_at)
      VALUES (src.id, transfer, -amounts[i], src.balance + amounts[i], src.balance, src.version, now()),
             (dst.id, transfer, amounts[i], dst.balance - amounts[i], dst.balance, dst.version, now());
    ids := ids || transfer;
  END LOOP;
  RETURN ids;
END
$$;
`;

/** The peer's account id for each of our account codes. */
export type PeerAccounts = Map<string, bigint>;

export async function createPeer(db: Db): Promise<void> {
  await db.execute(sql.raw(PEER_SCHEMA));
}

/** One peer account per account the entries use, under the same code and asset. */
export async function peerAccounts(db: Db, drafts: readonly EntryDraft[]): Promise<PeerAccounts> {
  const wanted = new Map<string, string>();
  for (const d of drafts)
    for (const l of d.lines) wanted.set(accountCode(l.account), assetOf(l.account.token));
  const input = JSON.stringify([...wanted].map(([code, asset]) => ({ code, asset })));
  await db.execute(sql`
    insert into peer.accounts (code, asset)
    select code, asset from jsonb_to_recordset(${input}::jsonb) as x(code text, asset text)
    on conflict (code) do nothing`);
  const { rows } = await db.execute<{ id: string; code: string }>(sql`
    select id::text, code from peer.accounts
    where code in (select code from jsonb_to_recordset(${input}::jsonb) as x(code text))`);
  return new Map(rows.map((r) => [r.code, BigInt(r.id)]));
}

export interface Transfer {
  from: bigint;
  to: bigint;
  amount: bigint;
}

/**
 * The transfers that make an entry's movement: per asset, each credit line's amount goes to the
 * debit lines in order (at most lines - 1 transfers; 2 for a 3-line checkout entry, 3 for 4).
 */
export function transfersOf(draft: EntryDraft, ids: PeerAccounts): Transfer[] {
  const byAsset = new Map<string, { debits: [bigint, bigint][]; credits: [bigint, bigint][] }>();
  for (const line of draft.lines) {
    const code = accountCode(line.account);
    const id = ids.get(code);
    if (id === undefined) throw new Error(`peer: no account for ${code}`);
    const asset = assetOf(line.account.token);
    let sides = byAsset.get(asset);
    if (!sides) {
      sides = { debits: [], credits: [] };
      byAsset.set(asset, sides);
    }
    if (line.amount > 0n) sides.debits.push([id, line.amount]);
    else sides.credits.push([id, -line.amount]);
  }
  const transfers: Transfer[] = [];
  for (const { debits, credits } of byAsset.values()) {
    let d = 0;
    let c = 0;
    while (d < debits.length && c < credits.length) {
      const debit = debits[d]!;
      const credit = credits[c]!;
      // biome-ignore lint/complexity/useMathMinMax: bigint amounts, which Math.min does not take.
      const amount = debit[1] < credit[1] ? debit[1] : credit[1];
      transfers.push({ from: credit[0], to: debit[0], amount });
      debit[1] -= amount;
      credit[1] -= amount;
      if (debit[1] === 0n) d++;
      if (credit[1] === 0n) c++;
    }
    if (d < debits.length || c < credits.length)
      throw new Error(`peer: entry ${draft.idempotencyKey} does not balance`);
  }
  return transfers;
}

/**
 * Posts entries through the peer in the caller's transaction: one call (one round trip) with
 * every transfer of every entry. Returns the number of peer entry rows written (two per transfer).
 */
export async function postPeer(
  tx: DbExecutor,
  drafts: readonly EntryDraft[],
  ids: PeerAccounts,
): Promise<number> {
  const from: string[] = [];
  const to: string[] = [];
  const amounts: string[] = [];
  const entryOf: number[] = [];
  drafts.forEach((draft, i) => {
    for (const t of transfersOf(draft, ids)) {
      from.push(t.from.toString());
      to.push(t.to.toString());
      amounts.push(t.amount.toString());
      entryOf.push(i + 1);
    }
  });
  const metadata = JSON.stringify(drafts.map((d) => d.metadata ?? {}));
  const times = drafts.map((d) => `"${d.occurredAt.toISOString()}"`);
  await executePrepared(
    tx,
    sql`select peer.create_transfers(${`{${from.join(',')}}`}::bigint[], ${`{${to.join(',')}}`}::bigint[],
      ${`{${amounts.join(',')}}`}::numeric[], ${`{${entryOf.join(',')}}`}::int[], ${metadata}::jsonb,
      ${`{${times.join(',')}}`}::timestamptz[])`,
  );
  return from.length * 2;
}

/** The peer's books must add up: per asset the balances sum to zero, and each equals its entries. */
export async function checkPeer(db: Db): Promise<void> {
  const { rows } = await db.execute<{ bad: string }>(sql`
    select count(*)::text as bad from (
      select a.id from peer.accounts a left join peer.entries e on e.account_id = a.id
      group by a.id, a.balance having a.balance <> coalesce(sum(e.amount), 0)
      union all
      select null from peer.accounts group by asset having sum(balance) <> 0
    ) x`);
  if (rows[0]?.bad !== '0') throw new Error(`peer: ${rows[0]?.bad} account(s) or asset(s) do not add up`);
}
