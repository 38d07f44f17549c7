/** What processing one stored webhook did. */
export type InboxOutcome =
  | { kind: 'already_done' }
  | { kind: 'applied'; intentId: string; storeId: string; settled: boolean }
  | { kind: 'claim_link_applied'; claimLinkId: string; storeId: string }
  /** Not applied yet, kept `received` for the inbox sweeper to try again (see REFUND_WEBHOOK_WAIT). */
  | { kind: 'waiting'; reason: string }
  | { kind: 'unusable'; reason: string };
