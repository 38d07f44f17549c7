-- Two plans that read the whole ledger on every payment when the statistics were taken while the
-- ledger was small (a new installation's first burst, before autovacuum analyzes): the cost of a
-- payment then grew with the ledger (docs/benchmarks.md, "CPU per payment", issue 33).
--
-- 1. "Has this intent a rule-1 entry, how many reversals" (the facts statement, every payment):
-- with an index on (ref_type, ref_id) and another on kind, the planner took the kind index and
-- filtered every entry of that kind. One index on all three columns answers it in one probe
-- whatever the statistics say, and serves every query the old (ref_type, ref_id) index served.
CREATE INDEX "ledger_entries_ref_kind_idx" ON "ledger_entries" USING btree ("ref_type","ref_id","kind");--> statement-breakpoint
DROP INDEX "ledger_entries_ref_idx";--> statement-breakpoint

-- 2. The postings' statement trigger (0010) joined the new postings to ledger_entries and
-- ledger_accounts, and with an underestimated ledger the planner hashed the whole of
-- ledger_entries. The same checks, each posting's entry and account read by primary key: the
-- subqueries are correlated and kept apart from the join (OFFSET 0), so they can only run once per
-- new posting as index probes. The rest of the function is 0010's, unchanged.
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
  SELECT p.entry_id, (e.tx_id <> pg_current_xact_id() OR age(e.entry_xmin) > 0), p.account_id, a.store_id, e.store_id
    INTO stray, not_ours, account, account_store, entry_store
    FROM new_postings p
    CROSS JOIN LATERAL (SELECT le.tx_id, le.xmin AS entry_xmin, le.store_id
                          FROM ledger_entries le WHERE le.id = p.entry_id OFFSET 0) e
    CROSS JOIN LATERAL (SELECT la.store_id FROM ledger_accounts la WHERE la.id = p.account_id OFFSET 0) a
    WHERE e.tx_id <> pg_current_xact_id() OR age(e.entry_xmin) > 0 OR a.store_id <> e.store_id
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
