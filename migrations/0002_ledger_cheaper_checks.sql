-- The same invariants as 0001, checked with less work per entry (docs/benchmarks.md): the
-- same-transaction rule once per INSERT statement over its new rows instead of once per posting,
-- and the commit-time balance check in one scan of the entry's postings instead of two.

DROP TRIGGER ledger_postings_same_transaction ON ledger_postings;
--> statement-breakpoint
DROP FUNCTION ledger_posting_same_transaction();
--> statement-breakpoint
CREATE FUNCTION ledger_postings_same_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  stray bigint;
BEGIN
  SELECT p.entry_id INTO stray
    FROM new_postings p JOIN ledger_entries e ON e.id = p.entry_id
    WHERE e.tx_id <> pg_current_xact_id()
    LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger: posting for entry % must be written in the transaction that wrote the entry', stray
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER ledger_postings_same_transaction AFTER INSERT ON ledger_postings
  REFERENCING NEW TABLE AS new_postings
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_postings_same_transaction();
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
  RETURN NULL;
END
$$;
