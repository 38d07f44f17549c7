CREATE TABLE "webhook_inbox" (
	"webhook_id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"endpoint" text NOT NULL,
	"status" text NOT NULL,
	"headers" jsonb NOT NULL,
	"body" "bytea" NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"processed_at" timestamp with time zone,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "webhook_nonces" (
	"nonce" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "checkout_intent_creations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"order_id" text,
	"request" jsonb NOT NULL,
	"outcome" text NOT NULL,
	"intent_id" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "checkout_intent_status_history" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"intent_id" text NOT NULL,
	"from_status" integer,
	"to_status" integer NOT NULL,
	"source" text NOT NULL,
	"observed_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "checkout_intents" (
	"id" text PRIMARY KEY NOT NULL,
	"store_id" text NOT NULL,
	"currency" integer,
	"currency_symbol" text,
	"amount_cents" bigint,
	"chain_id" bigint,
	"amount_coins" text,
	"coin_symbol" text,
	"coin_contract" text,
	"currency_rate" text,
	"status" integer,
	"order_id" text,
	"order_description" text,
	"user_id" text,
	"user_name" text,
	"error_message" text,
	"tx_hash" text,
	"tx_hash_2" text,
	"tx_from" text,
	"tx_to" text,
	"actual_paid_amount" text,
	"service_fee_amount" text,
	"net_income_amount" text,
	"payment_method_type" integer,
	"accepted_stable_coins" integer,
	"raw_payload" jsonb,
	"tracked_via" text NOT NULL,
	"tracked_at" timestamp with time zone DEFAULT now() NOT NULL,
	"status_changed_at" timestamp with time zone,
	"confirmed_at" timestamp with time zone,
	"settled_by" text,
	"last_polled_at" timestamp with time zone,
	"poll_count" integer DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "findings" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"severity" text NOT NULL,
	"store_id" text,
	"ref_type" text NOT NULL,
	"ref_id" text NOT NULL,
	"details" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	"acked_at" timestamp with time zone,
	"ack_note" text
);
--> statement-breakpoint
CREATE INDEX "webhook_inbox_waiting_idx" ON "webhook_inbox" USING btree ("received_at") WHERE status = 'received';--> statement-breakpoint
CREATE INDEX "checkout_intent_status_history_intent_idx" ON "checkout_intent_status_history" USING btree ("intent_id");--> statement-breakpoint
CREATE INDEX "checkout_intents_store_idx" ON "checkout_intents" USING btree ("store_id");--> statement-breakpoint
CREATE INDEX "checkout_intents_status_idx" ON "checkout_intents" USING btree ("status");--> statement-breakpoint
CREATE UNIQUE INDEX "findings_open_key" ON "findings" USING btree ("kind","ref_type","ref_id") WHERE resolved_at is null;--> statement-breakpoint
CREATE INDEX "findings_kind_idx" ON "findings" USING btree ("kind");