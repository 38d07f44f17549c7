-- A payment the service sent back whose intent stablebooks learns only after the settlement's grace
-- has both transfers booked to rule 9 (suspense in, owner transfer out); the settlement re-matches
-- the pair once the intent is known as sent back or failed (rematchPaymentReturns,
-- src/settlement/paymentReturns.ts), every pass. These two small partial indexes keep that pass
-- off the big tables: the intents sent back or failed that name a payment, and the owner transfers
-- out of a wallet (by wallet and recipient), the only rows it reads. Custom SQL: the schemas do
-- not declare them.
CREATE INDEX IF NOT EXISTS "checkout_intents_sent_back_paid_idx" ON "checkout_intents" USING btree ("chain_id") WHERE (status = 5 or status < 0) and (tx_hash is not null or tx_hash_2 is not null);--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "chain_transfers_unmatched_out_idx" ON "chain_transfers" USING btree ("chain_id","from_address","to_address") WHERE state = 'final' and matched_as = 'transfer_out_unmatched';
