-- Exchange rates for the valuation in the functional currency (docs/accounting.md, "Valuation").
-- Derived data of the books' valuation, never part of the immutable ledger: a late rate changes a
-- valuation, not an entry.
CREATE TABLE "rates" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"rate_date" date NOT NULL,
	"asset" text NOT NULL,
	"currency" text NOT NULL,
	"rate" numeric NOT NULL,
	"source" text NOT NULL,
	"source_ref" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "rates_rate_positive" CHECK ("rates"."rate" > 0),
	CONSTRAINT "rates_source_check" CHECK ("rates"."source" in ('intent', 'import', 'par')),
	CONSTRAINT "rates_currency_check" CHECK ("rates"."currency" ~ '^[A-Z]{3}$')
);
--> statement-breakpoint
CREATE UNIQUE INDEX "rates_key" ON "rates" USING btree ("rate_date","asset","currency","source","source_ref");