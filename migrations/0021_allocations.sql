CREATE TABLE "allocations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"transfer_id" bigint NOT NULL,
	"side" text NOT NULL,
	"obligation_type" text NOT NULL,
	"obligation_id" text NOT NULL,
	"purpose" text NOT NULL,
	"amount" numeric(78,0) NOT NULL,
	"rule" text NOT NULL,
	"entry_id" bigint,
	"store_id" text NOT NULL,
	"releases" bigint,
	"reason" text,
	"allocated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "allocations_releases_key" UNIQUE("releases"),
	CONSTRAINT "allocations_amount_sign" CHECK (("allocations"."releases" is null) = ("allocations"."amount" > 0) and "allocations"."amount" <> 0),
	CONSTRAINT "allocations_side" CHECK ("allocations"."side" in ('in', 'out')),
	CONSTRAINT "allocations_obligation_type" CHECK ("allocations"."obligation_type" in ('checkout_intent', 'claim_link', 'suspense', 'owner')),
	CONSTRAINT "allocations_purpose" CHECK ("allocations"."purpose" in ('payment', 'payment_excess', 'funding', 'fee_sweep', 'claim', 'refund', 'return', 'unmatched'))
);
--> statement-breakpoint
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_transfer_id_chain_transfers_id_fk" FOREIGN KEY ("transfer_id") REFERENCES "public"."chain_transfers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "allocations_transfer_idx" ON "allocations" USING btree ("transfer_id","side");--> statement-breakpoint
CREATE INDEX "allocations_obligation_idx" ON "allocations" USING btree ("obligation_type","obligation_id","purpose");