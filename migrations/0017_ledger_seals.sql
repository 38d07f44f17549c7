-- The hash chain over the ledger's entries (docs/accounting.md, "The entries' hash chain";
-- docs/decisions.md, "A hash chain over the entries, sealed by a job"). ledger_seals is written by
-- the sealing job only and, like the ledger, never updated, deleted or truncated. The index on
-- ledger_entries.tx_id lets the job read the entries not yet sealed (those at or above the last
-- run's horizon) without scanning the ledger.
CREATE TABLE "ledger_seals" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"entry_id" bigint NOT NULL,
	"prev_hash" text NOT NULL,
	"hash" text NOT NULL,
	"horizon" "xid8" NOT NULL,
	"sealed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "ledger_seals_entry_id_unique" UNIQUE("entry_id")
);
--> statement-breakpoint
ALTER TABLE "ledger_seals" ADD CONSTRAINT "ledger_seals_entry_fk" FOREIGN KEY ("entry_id") REFERENCES "public"."ledger_entries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "ledger_entries_tx_idx" ON "ledger_entries" USING btree ("tx_id");--> statement-breakpoint
ALTER TABLE "ledger_seals" ADD CONSTRAINT "ledger_seals_seq_check" CHECK (seq > 0);
--> statement-breakpoint
ALTER TABLE "ledger_seals" ADD CONSTRAINT "ledger_seals_hash_check"
  CHECK (hash ~ '^[0-9a-f]{64}$' AND prev_hash ~ '^[0-9a-f]{64}$');
--> statement-breakpoint
CREATE TRIGGER ledger_seals_immutable BEFORE UPDATE OR DELETE ON ledger_seals
  FOR EACH ROW EXECUTE FUNCTION ledger_forbid_change();
--> statement-breakpoint
CREATE TRIGGER ledger_seals_no_truncate BEFORE TRUNCATE ON ledger_seals
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_forbid_change();
