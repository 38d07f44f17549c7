import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { toJsonb } from '../db/storableJson.ts';
import type { Token } from '../ledger/accounts.ts';

/** The outbound event types (README, "Outbound events"). */
export const EVENT_TYPES = [
  'payment.booked',
  'payment.proven',
  'payout.settled',
  'finding.opened',
  'finding.resolved',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** How a claim link ended for `payout.settled`. */
export type PayoutOutcome = 'claimed' | 'refunded' | 'expired';

/** One event as its cause writes it: `id` derives from the cause, so a replay writes nothing new. */
export interface EventDraft {
  id: string;
  type: EventType;
  /** When the booked thing happened (the entry's occurred_at). */
  occurredAt: Date;
  /** The event's `data`, as sent (amounts as decimal strings, never numbers). */
  data: Record<string, unknown>;
}

/**
 * Writes an event into the outbox inside the caller's transaction, beside the entry it reports:
 * it is delivered only if that entry commits, and a retried booking (same cause, same id) writes no
 * second row (ON CONFLICT DO NOTHING). Always written, whether or not EVENTS_WEBHOOK_URL is set
 * (one small insert); only delivery depends on it. The findings events are written by triggers on
 * the findings table (migrations/0014_event_outbox.sql), so every writer of findings is covered.
 */
export async function recordEvent(tx: DbExecutor, draft: EventDraft): Promise<void> {
  await executePrepared(
    tx,
    sql`insert into event_outbox (event_id, type, occurred_at, payload)
        values (${draft.id}, ${draft.type}, ${draft.occurredAt.toISOString()}::timestamptz, ${toJsonb(draft.data)}::jsonb)
        on conflict (event_id) do nothing`,
  );
}

/** The token fields every money event carries. */
export function tokenData(token: Token): { chain_id: number; token: string; token_address: string } {
  return { chain_id: token.chainId, token: token.symbol, token_address: token.address.toLowerCase() };
}

/** `payment.booked` (rule 1): `payment.booked:<intent>`, and `:r<n>` for a rebooking after a reversal. */
export function paymentBookedId(intentId: string, revision: number): string {
  return revision > 0 ? `payment.booked:${intentId}:r${revision}` : `payment.booked:${intentId}`;
}

/** `payment.proven` (rule 2): the intent and the first log that proved it (`<chain>:<tx>:<log>`). */
export function paymentProvenId(intentId: string, transferId: string): string {
  return `payment.proven:${intentId}:${transferId}`;
}

/** `payout.settled`: the payout, the outcome and, for a claim or refund, its transfer. */
export function payoutSettledId(payoutId: string, outcome: PayoutOutcome, transferId?: string): string {
  return `payout.settled:${payoutId}:${outcome}${transferId ? `:${transferId}` : ''}`;
}
