CREATE TABLE "recon_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"period_from" timestamp with time zone NOT NULL,
	"period_to" timestamp with time zone NOT NULL,
	"store_key" text NOT NULL,
	"store_id" text,
	"trigger" text NOT NULL,
	"status" text NOT NULL,
	"passed" boolean,
	"phase" text,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"duration_ms" integer,
	"counts" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"files" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"error" text,
	CONSTRAINT "recon_runs_period_store" UNIQUE("period_from","period_to","store_key")
);
--> statement-breakpoint
ALTER TABLE "webhook_inbox" ADD COLUMN "ref_id" text;--> statement-breakpoint
CREATE INDEX "recon_runs_finished_idx" ON "recon_runs" USING btree ("finished_at");--> statement-breakpoint
CREATE INDEX "webhook_inbox_ref_idx" ON "webhook_inbox" USING btree ("ref_id");--> statement-breakpoint
-- Webhooks processed before ref_id existed: every stored checkout webhook that is not `rejected`
-- parsed as JSON at intake, so reading its intent id here cannot fail.
UPDATE "webhook_inbox" SET "ref_id" = convert_from("body", 'UTF8')::jsonb ->> 'all_svc_checkout_intent_id'
WHERE "endpoint" = 'checkout' AND "status" = 'processed' AND "ref_id" IS NULL;
