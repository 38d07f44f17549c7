-- Rules of the ledger that PostgreSQL enforces itself (docs/accounting.md, "Ledger tables"),
-- so that the application cannot write an unbalanced or edited ledger even by mistake.

-- docs/accounting.md, "Ledger tables": a posting amount is never zero; account types and tokens are well-formed.
ALTER TABLE ledger_postings ADD CONSTRAINT ledger_postings_amount_nonzero CHECK (amount <> 0);
--> statement-breakpoint
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_type_check
  CHECK (type IN ('asset', 'liability', 'income', 'expense', 'equity'));
--> statement-breakpoint
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_token_check CHECK (token ~ '^0x[0-9a-f]{40}$');
--> statement-breakpoint
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_decimals_check CHECK (decimals BETWEEN 0 AND 36);
--> statement-breakpoint

-- Balances read through these without touching the heap: the amount is in the index.
CREATE INDEX ledger_postings_account_tx_idx ON ledger_postings (account_id, tx_id) INCLUDE (amount);
--> statement-breakpoint
CREATE INDEX ledger_postings_account_time_idx ON ledger_postings (account_id, occurred_at) INCLUDE (amount);
--> statement-breakpoint

-- (b) Entries, postings and accounts are never updated, deleted or truncated: a mistake is
-- corrected by a reversing entry, which keeps the history auditable.
CREATE FUNCTION ledger_forbid_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger: % on % is not allowed: the ledger is append-only (post a reversing entry instead)',
    TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'restrict_violation';
END
$$;
--> statement-breakpoint
CREATE TRIGGER ledger_entries_immutable BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_postings_immutable BEFORE UPDATE OR DELETE ON ledger_postings
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_postings_no_truncate BEFORE TRUNCATE ON ledger_postings
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_accounts_immutable BEFORE UPDATE OR DELETE ON ledger_accounts
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_accounts_no_truncate BEFORE TRUNCATE ON ledger_accounts
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint

-- Postings join an entry only in the transaction that wrote the entry, so the balance check
-- below, which runs once at that transaction's commit, sees every posting the entry will have.
CREATE FUNCTION ledger_posting_same_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM ledger_entries WHERE id = NEW.entry_id AND tx_id = pg_current_xact_id()) THEN
    RAISE EXCEPTION 'ledger: posting for entry % must be written in the transaction that wrote the entry', NEW.entry_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER ledger_postings_same_transaction BEFORE INSERT ON ledger_postings
  FOR EACH ROW EXECUTE FUNCTION ledger_posting_same_transaction();
--> statement-breakpoint

-- (a) + (d) At commit, every new entry has at least two postings and they sum to zero per asset.
-- A deferred constraint trigger: the postings are written after the entry, in the same transaction.
CREATE FUNCTION ledger_check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n integer;
  bad_asset text;
  bad_sum numeric;
BEGIN
  SELECT count(*) INTO n FROM ledger_postings WHERE entry_id = NEW.id;
  IF n < 2 THEN
    RAISE EXCEPTION 'ledger: entry % (%) has % posting(s); an entry needs at least two', NEW.id, NEW.idempotency_key, n
      USING ERRCODE = 'check_violation';
  END IF;
  SELECT asset, sum(amount) INTO bad_asset, bad_sum
    FROM ledger_postings WHERE entry_id = NEW.id
    GROUP BY asset HAVING sum(amount) <> 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger: entry % (%) does not balance: asset % sums to %', NEW.id, NEW.idempotency_key, bad_asset, bad_sum
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_check_entry_balanced();
