/**
 * Every finding kind the daemon records: the tables of docs/accounting.md, "Findings", in their
 * order. FindingDraft's kind is one of these, so code cannot record a kind that is not listed here;
 * the report's sentences (src/recon/report/findingSentences.ts) have one per kind, and a test keeps
 * this list, the docs' tables and the sentences in step. The recon checks write their kinds in SQL:
 * their OwnedKind names them, typed by this list too.
 */
export const FINDING_KINDS = [
  'underpaid',
  'overpaid',
  'fee_arithmetic_mismatch',
  'unknown_token',
  'confirmed_without_amounts',
  'amount_format_error',
  'confirmed_amounts_changed',
  'confirmed_facts_changed',
  'confirmed_then_failed',
  'proven_then_failed',
  'terminal_status_changed',
  'webhook_api_mismatch',
  'intent_poll_refused',
  'malformed_webhook',
  'webhook_for_unknown_intent',
  'webhook_unprocessable',
  'unhandled_webhook_event',
  'intent_creation_unresolved',
  'missing_webhook',
  'stuck_intent',
  'amount_mismatch',
  'payment_amount_mismatch',
  'payment_unknown_token',
  'token_mismatch',
  'recipient_mismatch',
  'recipient_not_store_wallet',
  'payment_tx_not_found',
  'payment_tx_reverted',
  'payment_transfer_missing',
  'webhook_without_chain_proof',
  'unmatched_transfer_in',
  'suspense_classification_superseded',
  'unmatched_transfer_out',
  'reorged_transfer',
  'reorg_beyond_finality',
  'claim_link_create_mismatch',
  'claim_link_closed_on_replay',
  'cancelled_outside_stablebooks',
  'claim_link_close_conflict',
  'webhook_for_unknown_claim_link',
  'refund_tx_hash_mismatch',
  'funding_mismatch',
  'funding_matched_by_amount',
  'funding_awaits_create_outcome',
  'claim_link_pool_refused',
  'claimed_after_expiry',
  'claimed_after_cancel',
  'cancel_races_pool_outflow',
  'claim_link_unexplained_outflow',
  'claim_link_refund_unexpected',
  'refund_overdue',
  'expiry_refund_overdue',
  'claim_unproven',
  'balance_proof_failed',
  'trial_balance_nonzero',
  'ledger_chain_broken',
  'valuation_rate_missing',
] as const;

export type FindingKind = (typeof FINDING_KINDS)[number];

const KNOWN: ReadonlySet<string> = new Set(FINDING_KINDS);

/** Whether a kind read from the database is one this version records (an older one may not be). */
export function isFindingKind(kind: string): kind is FindingKind {
  return KNOWN.has(kind);
}
