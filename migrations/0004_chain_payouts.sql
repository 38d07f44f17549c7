CREATE TABLE "balance_proofs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"chain_id" bigint NOT NULL,
	"token" text NOT NULL,
	"symbol" text NOT NULL,
	"wallet" text NOT NULL,
	"role" text NOT NULL,
	"block_number" bigint,
	"ledger_balance" numeric(78,0) NOT NULL,
	"chain_balance" numeric(78,0),
	"ok" boolean,
	"error" text,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"proved_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chain_cursors" (
	"chain_id" bigint PRIMARY KEY NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"head_block" bigint,
	"finalized_block" bigint,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "chain_transfers" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"chain_id" bigint NOT NULL,
	"tx_hash" text NOT NULL,
	"log_index" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_hash" text NOT NULL,
	"block_time" timestamp with time zone NOT NULL,
	"token" text NOT NULL,
	"from_address" text NOT NULL,
	"to_address" text NOT NULL,
	"value" numeric(78,0) NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"source" text NOT NULL,
	"found_at" timestamp with time zone DEFAULT now() NOT NULL,
	"final_at" timestamp with time zone,
	"orphaned_at" timestamp with time zone,
	"store_id" text,
	"matched_as" text,
	"matched_ref" text,
	"applied_at" timestamp with time zone,
	"unwound_at" timestamp with time zone,
	CONSTRAINT "chain_transfers_inclusion" UNIQUE("chain_id","tx_hash","log_index","block_hash"),
	CONSTRAINT "chain_transfers_lowercase" CHECK ("chain_transfers"."tx_hash" = lower("chain_transfers"."tx_hash") and "chain_transfers"."block_hash" = lower("chain_transfers"."block_hash")
      and "chain_transfers"."token" = lower("chain_transfers"."token") and "chain_transfers"."from_address" = lower("chain_transfers"."from_address") and "chain_transfers"."to_address" = lower("chain_transfers"."to_address")),
	CONSTRAINT "chain_transfers_value" CHECK ("chain_transfers"."value" >= 0)
);
--> statement-breakpoint
CREATE TABLE "chain_watched_wallets" (
	"chain_id" bigint NOT NULL,
	"address" text NOT NULL,
	"role" text NOT NULL,
	"store_id" text NOT NULL,
	"claim_link_id" text,
	"from_block" bigint NOT NULL,
	"caught_up" boolean DEFAULT false NOT NULL,
	"added_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "chain_watched_wallets_chain_id_address_pk" PRIMARY KEY("chain_id","address")
);
--> statement-breakpoint
CREATE TABLE "payouts" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"reference_id" text NOT NULL,
	"amount" text NOT NULL,
	"coin" integer NOT NULL,
	"chain_id" bigint NOT NULL,
	"token_address" text NOT NULL,
	"receiver_email" text,
	"sender_name" text,
	"sender_message" text,
	"create_outcome" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"idempotent_hit" boolean DEFAULT false NOT NULL,
	"claim_link_id" text,
	"link_status" text,
	"claim_url_enc" text,
	"claim_token_enc" text,
	"funding_tx_hash" text,
	"funded_amount" text,
	"pool_address" text,
	"funded_at" timestamp with time zone,
	"claimed_at" timestamp with time zone,
	"cancelled_at" timestamp with time zone,
	"expired_at" timestamp with time zone,
	"refund_tx_hash" text,
	"refunded_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "payouts_claim_link_id_unique" UNIQUE("claim_link_id"),
	CONSTRAINT "payouts_reference" UNIQUE("store_id","reference_id"),
	CONSTRAINT "payouts_coin" CHECK ("payouts"."coin" in (1, 2))
);
--> statement-breakpoint
CREATE INDEX "balance_proofs_wallet_idx" ON "balance_proofs" USING btree ("chain_id","wallet","token","proved_at");--> statement-breakpoint
CREATE INDEX "chain_transfers_state_idx" ON "chain_transfers" USING btree ("chain_id","state","block_number");--> statement-breakpoint
CREATE INDEX "chain_transfers_tx_idx" ON "chain_transfers" USING btree ("chain_id","tx_hash");--> statement-breakpoint
CREATE INDEX "chain_transfers_unapplied_idx" ON "chain_transfers" USING btree ("chain_id","block_number") WHERE state = 'final' and applied_at is null;--> statement-breakpoint
CREATE INDEX "payouts_open_idx" ON "payouts" USING btree ("link_status") WHERE claimed_at is null and cancelled_at is null and expired_at is null;--> statement-breakpoint
CREATE INDEX "checkout_intents_tx_hash_idx" ON "checkout_intents" USING btree (lower("tx_hash"));--> statement-breakpoint
CREATE INDEX "checkout_intents_tx_hash_2_idx" ON "checkout_intents" USING btree (lower("tx_hash_2"));