-- The indexer re-reads each block range once more when it has become final (docs/decisions.md,
-- "Re-read logs at finality"): a node can answer eth_getLogs near the head with logs missing while
-- the range's end hash checks out. verified_block: every block up to it had its logs read while
-- final (src/chain/chainCursor.ts). Existing cursors count as verified up to their recorded
-- finality, so an upgrade does not re-read history; lower it by hand to re-read a span.
ALTER TABLE "chain_cursors" ADD COLUMN "verified_block" bigint;--> statement-breakpoint
UPDATE "chain_cursors" SET "verified_block" = least("block_number", "finalized_block");
