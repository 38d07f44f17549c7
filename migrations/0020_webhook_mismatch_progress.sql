-- webhook_api_mismatch findings the old rule opened on normal progress: a webhook of a status on
-- the way (CREATED..SEND_BACK, ON_CHAIN) processed after the API had moved on, differing in the
-- status alone. Such a webhook now agrees with any later status (docs/accounting.md), and these
-- warnings never resolved by themselves (only a read saying "not paid" again would). A finding
-- that names any other field, or a terminal status, stays as it is.
UPDATE "findings" SET "resolved_at" = now()
WHERE "kind" = 'webhook_api_mismatch' AND "resolved_at" IS NULL
  AND "details"->'differences' ? 'status'
  AND ("details"->'differences') - 'status' = '{}'::jsonb
  AND "details"->'differences'->'status'->>'webhook' IN ('1', '2', '3', '4', '5', '10');
