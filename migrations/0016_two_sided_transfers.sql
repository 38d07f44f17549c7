-- A transfer between two watched wallets is two facts, each decided on its own (the settlement's
-- applyOne): a row's matched_as may hold an inflow's kind beside `transfer_out_unmatched`, so the
-- owner transfers out that rematchPaymentReturns reads are those whose kinds include it, not
-- those that are only it. Custom SQL, as 0013: the schemas do not declare this index.
DROP INDEX IF EXISTS "chain_transfers_unmatched_out_idx";--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chain_transfers_unmatched_out_idx" ON "chain_transfers" USING btree ("chain_id","from_address","to_address") WHERE state = 'final' and matched_as like '%transfer_out_unmatched%';
