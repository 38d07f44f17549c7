ALTER TABLE "webhook_inbox" ADD COLUMN "actual_paid_amount" numeric;--> statement-breakpoint
-- Checkout webhooks processed before the column existed: every processed one parsed with the
-- spec's model (actual_paid_amount a decimal string or null), so reading it here cannot fail; the
-- value is what reconciliation's matching used to parse from the body on every run.
UPDATE "webhook_inbox" SET "actual_paid_amount" = (convert_from("body", 'UTF8')::jsonb ->> 'actual_paid_amount')::numeric
WHERE "endpoint" = 'checkout' AND "status" = 'processed' AND "actual_paid_amount" IS NULL;--> statement-breakpoint
CREATE INDEX "webhook_inbox_checkout_paid_idx" ON "webhook_inbox" USING btree ("ref_id","actual_paid_amount") WHERE endpoint = 'checkout' and status = 'processed';
--> statement-breakpoint
-- Reconciliation's matching sums, per intent, the final transfers the matcher booked as its
-- payment: read in intent order from this index (value included), it merges with the intents and
-- the webhooks without hashing a million groups. Custom SQL: the chain schema does not declare it.
CREATE INDEX IF NOT EXISTS "chain_transfers_payment_ref_idx" ON "chain_transfers" USING btree ("matched_ref") INCLUDE ("value") WHERE state = 'final' and matched_ref is not null and (matched_as like '%payment_proof%' or matched_as like '%payment_mismatch%');
