-- The allocations' invariants (docs/accounting.md, "Pieces and bundles"), in PostgreSQL so that no
-- bug can break them: rows are never changed or deleted (a release is a new row of the negated
-- amount, naming the allocation it releases); a release mirrors its allocation exactly and is made
-- once (allocations_releases_key); at the end of every transaction that wrote allocations, each
-- side of a transfer carries between zero and the transfer's value, and each obligation's share of
-- it is zero or more. Deferred, so a transaction may release and allocate again in any order.
CREATE FUNCTION allocations_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'allocations: rows are append-only (% refused); release an allocation with a row of the negated amount', TG_OP
    USING ERRCODE = 'check_violation';
END
$$;
--> statement-breakpoint
CREATE TRIGGER allocations_immutable BEFORE UPDATE OR DELETE ON allocations
  FOR EACH ROW EXECUTE FUNCTION allocations_immutable();
--> statement-breakpoint
CREATE FUNCTION allocations_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  released allocations%ROWTYPE;
  side_total numeric;
  share numeric;
  value numeric;
BEGIN
  IF NEW.releases IS NOT NULL THEN
    SELECT * INTO released FROM allocations WHERE id = NEW.releases;
    IF NOT FOUND OR released.releases IS NOT NULL OR released.transfer_id <> NEW.transfer_id
       OR released.side <> NEW.side OR released.obligation_type <> NEW.obligation_type
       OR released.obligation_id <> NEW.obligation_id OR released.purpose <> NEW.purpose
       OR released.amount <> -NEW.amount THEN
      RAISE EXCEPTION 'allocations: row % releases % but does not mirror it', NEW.id, NEW.releases
        USING ERRCODE = 'check_violation';
    END IF;
  END IF;
  SELECT t.value INTO value FROM chain_transfers t WHERE t.id = NEW.transfer_id;
  SELECT coalesce(sum(amount), 0) INTO side_total FROM allocations
    WHERE transfer_id = NEW.transfer_id AND side = NEW.side;
  IF side_total < 0 OR side_total > value THEN
    RAISE EXCEPTION 'allocations: the % side of transfer % is allocated % of its value %', NEW.side, NEW.transfer_id, side_total, value
      USING ERRCODE = 'check_violation';
  END IF;
  SELECT coalesce(sum(amount), 0) INTO share FROM allocations
    WHERE transfer_id = NEW.transfer_id AND side = NEW.side AND obligation_type = NEW.obligation_type
      AND obligation_id = NEW.obligation_id AND purpose = NEW.purpose;
  IF share < 0 THEN
    RAISE EXCEPTION 'allocations: % % (%) holds % of transfer %', NEW.obligation_type, NEW.obligation_id, NEW.purpose, share, NEW.transfer_id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER allocations_check AFTER INSERT ON allocations
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION allocations_check();
--> statement-breakpoint
-- An allocation lives as long as the entry it caused: reversing that entry (a reorg, a rule that
-- explains a transfer later and moves it out of suspense, a return re-matched) releases it in the
-- same transaction, whichever code reversed it. Only reversals fire it (the WHEN clause is checked
-- without calling the function), so the usual insert pays nothing.
CREATE FUNCTION allocations_release_with_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO allocations
    (transfer_id, side, obligation_type, obligation_id, purpose, amount, rule, entry_id, store_id, releases, reason)
  SELECT a.transfer_id, a.side, a.obligation_type, a.obligation_id, a.purpose, -a.amount, a.rule, a.entry_id,
         a.store_id, a.id, 'entry ' || NEW.reverses_entry_id || ' reversed by entry ' || NEW.id
    FROM allocations a
   WHERE a.entry_id = NEW.reverses_entry_id AND a.releases IS NULL
     AND NOT EXISTS (SELECT 1 FROM allocations r WHERE r.releases = a.id);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER allocations_release_with_entry AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.reverses_entry_id IS NOT NULL) EXECUTE FUNCTION allocations_release_with_entry();
--> statement-breakpoint
CREATE INDEX allocations_entry_idx ON allocations (entry_id) WHERE entry_id IS NOT NULL;
