CREATE TABLE "corrections" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"finding_id" bigint NOT NULL,
	"entry_id" bigint NOT NULL,
	"store_id" text NOT NULL,
	"from_account" text NOT NULL,
	"to_account" text NOT NULL,
	"amount" numeric(78,0) NOT NULL,
	"note" text NOT NULL,
	"made_by" text NOT NULL,
	"made_at" timestamp with time zone NOT NULL,
	"undone_at" timestamp with time zone,
	"undone_by" text,
	"undo_note" text,
	CONSTRAINT "corrections_entry_key" UNIQUE("entry_id"),
	CONSTRAINT "corrections_amount_positive" CHECK ("corrections"."amount" > 0),
	CONSTRAINT "corrections_undo_check" CHECK ((undone_at is null) = (undone_by is null))
);
--> statement-breakpoint
CREATE TABLE "rate_supersessions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"rate_id" bigint NOT NULL,
	"rate_date" date NOT NULL,
	"asset" text NOT NULL,
	"currency" text NOT NULL,
	"rate" numeric NOT NULL,
	"previous_rate" numeric NOT NULL,
	"note" text NOT NULL,
	"made_by" text NOT NULL,
	"made_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rate_supersessions_rate_positive" CHECK ("rate_supersessions"."rate" > 0)
);
--> statement-breakpoint
ALTER TABLE "corrections" ADD CONSTRAINT "corrections_finding_fk" FOREIGN KEY ("finding_id") REFERENCES "public"."findings"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "corrections" ADD CONSTRAINT "corrections_entry_fk" FOREIGN KEY ("entry_id") REFERENCES "public"."ledger_entries"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "rate_supersessions" ADD CONSTRAINT "rate_supersessions_rate_fk" FOREIGN KEY ("rate_id") REFERENCES "public"."rates"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "corrections_store_idx" ON "corrections" USING btree ("store_id");--> statement-breakpoint
CREATE INDEX "rate_supersessions_day_idx" ON "rate_supersessions" USING btree ("rate_date","asset","currency");