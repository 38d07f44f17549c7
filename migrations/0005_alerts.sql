CREATE TABLE "alert_states" (
	"key" text PRIMARY KEY NOT NULL,
	"severity" text NOT NULL,
	"status" text NOT NULL,
	"title" text NOT NULL,
	"text" text NOT NULL,
	"labels" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"pending" text,
	"pending_sent_to" text[] DEFAULT '{}'::text[] NOT NULL,
	"first_fired_at" timestamp with time zone NOT NULL,
	"last_notified_at" timestamp with time zone,
	"resolved_at" timestamp with time zone,
	"notify_count" integer DEFAULT 0 NOT NULL,
	"last_error" text
);
--> statement-breakpoint
CREATE INDEX "alert_states_pending_idx" ON "alert_states" USING btree ("key") WHERE pending is not null;