-- A person's classifications of money in suspense (docs/accounting.md, rule 10): what a rule-9
-- item was, who said so and why, beside the suspense.classified entry that moved it. Rows are
-- reversed (reversed_at, reversed_by, reversal_note), never deleted; at most one live
-- classification per suspense entry (suspense_classifications_live_key).
CREATE TABLE "suspense_classifications" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"suspense_entry_id" bigint NOT NULL,
	"entry_id" bigint NOT NULL,
	"store_id" text NOT NULL,
	"classification" text NOT NULL,
	"note" text NOT NULL,
	"classified_by" text NOT NULL,
	"classified_at" timestamp with time zone NOT NULL,
	"reversed_at" timestamp with time zone,
	"reversed_by" text,
	"reversal_note" text,
	CONSTRAINT "suspense_classifications_entry_key" UNIQUE("entry_id"),
	CONSTRAINT "suspense_classifications_classification_check" CHECK (classification in ('owner_contribution', 'owner_withdrawal', 'refund_due', 'income_other')),
	CONSTRAINT "suspense_classifications_reversal_check" CHECK ((reversed_at is null) = (reversed_by is null))
);
--> statement-breakpoint
ALTER TABLE "suspense_classifications" ADD CONSTRAINT "suspense_classifications_suspense_entry_fk" FOREIGN KEY ("suspense_entry_id") REFERENCES "public"."ledger_entries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "suspense_classifications" ADD CONSTRAINT "suspense_classifications_entry_fk" FOREIGN KEY ("entry_id") REFERENCES "public"."ledger_entries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "suspense_classifications_live_key" ON "suspense_classifications" USING btree ("suspense_entry_id") WHERE reversed_at is null;--> statement-breakpoint
CREATE INDEX "suspense_classifications_store_idx" ON "suspense_classifications" USING btree ("store_id");
