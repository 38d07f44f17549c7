-- What the service said apart from what the chain proved (docs/accounting.md, rule 6): a cancel
-- answered 50108 "claimed", or a create replay saying so, sets claimed_reported_at; claimed_at is
-- set only by the chain side when the claim's transfer is final and booked (rule 6). Existing
-- links the service called claimed and the chain has not are dated by their last update, the
-- moment the reconciliation's claim_unproven measured from until now.
ALTER TABLE "payouts" ADD COLUMN "claimed_reported_at" timestamp with time zone;--> statement-breakpoint
UPDATE "payouts" SET "claimed_reported_at" = "updated_at" WHERE "link_status" = 'claimed' AND "claimed_at" IS NULL;
