-- Four holes in the ledger's invariants, closed (docs/decisions.md, "Ledger invariants in SQL"
-- and "Ledger balances are derived, with transaction-id checkpoints").

-- 1. tx_id is always the inserting transaction's id. A writer that supplied a smaller one hid its
-- posting from current balances (below a checkpoint's horizon). A CHECK rather than a BEFORE
-- trigger: no function call per row on the hot path, and a wrong value is refused, not silently
-- replaced. NOT VALID, so the rows already there are not re-checked (no other transaction's id can
-- pass it) and pg_dump re-creates it after the data (restored rows keep their original tx_id).
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_tx_id_current
  CHECK (tx_id = pg_current_xact_id()) NOT VALID;
--> statement-breakpoint
ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_tx_id_current
  CHECK (tx_id = pg_current_xact_id()) NOT VALID;
--> statement-breakpoint

-- 2. The balance check could run before the entry's last posting: SET CONSTRAINTS ALL IMMEDIATE
-- fires it early, and a posting inserted after that was never checked. Now the check records the
-- highest entry id it has checked in this transaction, in a transaction-local setting (undone with
-- the transaction or savepoint that ran the check, as the check's own firing is), and the
-- per-statement postings trigger below checks again, at the end of the statement, every entry at
-- or below that mark that the statement gave postings. The mark over-approximates the checked
-- entries (a superset costs an extra check, never a missed one). On the usual path every check
-- runs at COMMIT, after the last insert, so the statement trigger finds no mark and does nothing
-- more. (A deferred re-check trigger per posting cost ~50 us of server time per 3-posting entry,
-- measured; this, a setting read per statement and one write per check.) Refusing such postings
-- instead would also refuse postEntry's own one-statement entry under IMMEDIATE: the entry's check
-- fires before the postings' statement trigger.
CREATE FUNCTION ledger_balance_checked_upto() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT nullif(current_setting('ledger.balance_checked_upto', true), '')::bigint
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION ledger_check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
  bad_asset text;
  bad_sum numeric;
BEGIN
  SELECT coalesce(sum(x.cnt), 0),
         (array_agg(x.asset ORDER BY x.asset) FILTER (WHERE x.total <> 0))[1],
         (array_agg(x.total ORDER BY x.asset) FILTER (WHERE x.total <> 0))[1]
    INTO n, bad_asset, bad_sum
    FROM (SELECT asset, count(*) AS cnt, sum(amount) AS total
            FROM ledger_postings WHERE entry_id = NEW.id GROUP BY asset) x;
  IF n < 2 THEN
    RAISE EXCEPTION 'ledger: entry % (%) has % posting(s); an entry needs at least two', NEW.id, NEW.idempotency_key, n
      USING ERRCODE = 'check_violation';
  END IF;
  IF bad_asset IS NOT NULL THEN
    RAISE EXCEPTION 'ledger: entry % (%) does not balance: asset % sums to %', NEW.id, NEW.idempotency_key, bad_asset, bad_sum
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.id > coalesce(ledger_balance_checked_upto(), 0) THEN
    PERFORM set_config('ledger.balance_checked_upto', NEW.id::text, true);
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint

-- 3. The per-statement postings trigger, two more rules besides the re-check of item 2:
--  - the posting's account belongs to the entry's store (a posting to another store's account
--    was accepted);
--  - "written in the transaction that wrote the entry" also looks at who physically inserted the
--    entry row (its xmin): after a pg_dump/restore the restored entries keep another server's
--    tx_id, which this server's counter can reach later, and that one transaction could then add
--    postings to an old entry. Among rows whose tx_id is this transaction's id, age(xmin) <= 0
--    holds only for those this transaction (or one of its subtransactions) inserted.
CREATE OR REPLACE FUNCTION ledger_postings_same_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  stray bigint;
  not_ours boolean;
  account bigint;
  account_store text;
  entry_store text;
  checked_upto bigint;
  entry_key text;
  bad_asset text;
  bad_sum numeric;
BEGIN
  SELECT p.entry_id, (e.tx_id <> pg_current_xact_id() OR age(e.xmin) > 0), p.account_id, a.store_id, e.store_id
    INTO stray, not_ours, account, account_store, entry_store
    FROM new_postings p
    JOIN ledger_entries e ON e.id = p.entry_id
    JOIN ledger_accounts a ON a.id = p.account_id
    WHERE e.tx_id <> pg_current_xact_id() OR age(e.xmin) > 0 OR a.store_id <> e.store_id
    LIMIT 1;
  IF FOUND THEN
    IF not_ours THEN
      RAISE EXCEPTION 'ledger: posting for entry % must be written in the transaction that wrote the entry', stray
        USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RAISE EXCEPTION 'ledger: posting for entry % of store % is to account % of store %; an entry posts to its own store''s accounts',
      stray, entry_store, account, account_store
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;

  checked_upto := ledger_balance_checked_upto();
  IF checked_upto IS NOT NULL THEN
    SELECT x.entry_id, e.idempotency_key, x.bad_asset, x.bad_sum
      INTO stray, entry_key, bad_asset, bad_sum
      FROM (SELECT q.entry_id,
                   (array_agg(q.asset ORDER BY q.asset) FILTER (WHERE q.total <> 0))[1] AS bad_asset,
                   (array_agg(q.total ORDER BY q.asset) FILTER (WHERE q.total <> 0))[1] AS bad_sum
              FROM (SELECT lp.entry_id, lp.asset, sum(lp.amount) AS total
                      FROM ledger_postings lp
                      WHERE lp.entry_id IN (SELECT np.entry_id FROM new_postings np WHERE np.entry_id <= checked_upto)
                      GROUP BY lp.entry_id, lp.asset) q
             GROUP BY q.entry_id) x
      JOIN ledger_entries e ON e.id = x.entry_id
      WHERE x.bad_asset IS NOT NULL
      ORDER BY x.entry_id
      LIMIT 1;
    IF FOUND THEN
      RAISE EXCEPTION 'ledger: entry % (%) does not balance after postings added once it was checked: asset % sums to %',
        stray, entry_key, bad_asset, bad_sum
        USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint

-- 4. Balance checkpoints restored from another server. A checkpoint's horizon is only meaningful
-- in the transaction-id history of the server that wrote it: restored by pg_dump/pg_restore into a
-- server whose counter is below the horizon, every posting written there until the counter passes
-- the horizon would be below it and never counted. A checkpoint is usable when its horizon is at or
-- below the id of the transaction that inserted its row into this database (its xmin, widened to
-- xid8 against the current snapshot): true for every checkpoint written here (the horizon is the
-- xmin of the writer's own snapshot), and for a restored one exactly when the restore ran after
-- the horizon in this server's counter, so that every later posting is at or above it. Unlike
-- comparing the horizon with the current counter, this does not turn true once the counter passes
-- the horizon. (The widening is exact within 2^31 transactions of the row's insertion. An older
-- row widens to a later epoch: a checkpoint written here stays usable, and a restored unusable one
-- would be long gone, since checkpointBalances, run every 5 minutes, deletes unusable rows.)
CREATE FUNCTION ledger_checkpoint_usable(horizon xid8, row_xmin xid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT horizon::text::bigint <= pg_snapshot_xmax(pg_current_snapshot())::text::bigint
    + ((row_xmin::text::bigint - pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296 + 6442450944) % 4294967296)
    - 2147483648
$$;
