-- A claim-link pool is done once the transfer that closes its link (the claim, or the refund to
-- custody) is final and booked: the indexer's log filter leaves such pools out (watchedWallets,
-- `closedPools: 'exclude'`), so the filter does not grow with every link ever paid. This index
-- finds a pool's closing transfer by its sender. Custom SQL: the chain schema does not declare it.
CREATE INDEX IF NOT EXISTS "chain_transfers_pool_closing_idx" ON "chain_transfers" USING btree ("chain_id","from_address") WHERE state = 'final' and applied_at is not null and (matched_as like '%claim_link_claimed%' or matched_as like '%claim_link_refunded%');
