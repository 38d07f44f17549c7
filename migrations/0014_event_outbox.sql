-- The outbox of outbound events (src/events): a row per event, written in the transaction of the
-- booking that causes it and delivered later by the events.deliver job (at least once, deduped by
-- event_id). The findings events come from the triggers below, so every writer of findings (the
-- booking functions, recon's sync, the overdue-refund check, raw resolves) is covered in its own
-- transaction: finding.opened for a new row, finding.resolved when resolved_at is set. Statement
-- triggers with transition tables: one insert per statement, however many findings it wrote.
CREATE TABLE "event_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"type" text NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"payload" jsonb NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	"given_up_at" timestamp with time zone,
	"last_error" text,
	CONSTRAINT "event_outbox_event_id_unique" UNIQUE("event_id")
);
--> statement-breakpoint
CREATE INDEX "event_outbox_due_idx" ON "event_outbox" USING btree ("next_attempt_at","id") WHERE delivered_at is null and given_up_at is null;--> statement-breakpoint
CREATE INDEX "event_outbox_recorded_idx" ON "event_outbox" USING btree ("recorded_at");
--> statement-breakpoint
-- Times as JavaScript writes them (UTC, milliseconds, Z), whatever the session's time zone.
CREATE OR REPLACE FUNCTION "events_utc"(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "events_finding_data"(f "findings") RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'finding_id', f.id::text, 'kind', f.kind, 'severity', f.severity, 'store_id', f.store_id,
    'ref', jsonb_build_object('type', f.ref_type, 'id', f.ref_id), 'details', f.details,
    'first_seen_at', events_utc(f.first_seen_at), 'resolved_at', events_utc(f.resolved_at))
$$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "events_findings_opened"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_outbox (event_id, type, occurred_at, payload)
  SELECT 'finding.opened:' || n.id, 'finding.opened', n.first_seen_at, events_finding_data(n)
  FROM new_findings n ORDER BY n.id
  ON CONFLICT (event_id) DO NOTHING;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE OR REPLACE FUNCTION "events_findings_resolved"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_outbox (event_id, type, occurred_at, payload)
  SELECT 'finding.resolved:' || n.id, 'finding.resolved', n.resolved_at, events_finding_data(n)
  FROM new_findings n JOIN old_findings o ON o.id = n.id
  WHERE o.resolved_at IS NULL AND n.resolved_at IS NOT NULL
  ORDER BY n.id
  ON CONFLICT (event_id) DO NOTHING;
  RETURN NULL;
END $$;--> statement-breakpoint
CREATE TRIGGER "findings_events_opened" AFTER INSERT ON "findings"
  REFERENCING NEW TABLE AS new_findings FOR EACH STATEMENT EXECUTE FUNCTION events_findings_opened();--> statement-breakpoint
CREATE TRIGGER "findings_events_resolved" AFTER UPDATE ON "findings"
  REFERENCING OLD TABLE AS old_findings NEW TABLE AS new_findings FOR EACH STATEMENT EXECUTE FUNCTION events_findings_resolved();
