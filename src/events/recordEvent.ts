import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { toJsonb } from '../db/storableJson.ts';
import type { Token } from '../ledger/accounts.ts';

/**
 * The outbound event types (README, "Outbound events"). Each `.reversed` type takes back one
 * announcement of the type it names, when the ledger reverses what that announcement reported.
 */
export const EVENT_TYPES = [
  'payment.booked',
  'payment.booked.reversed',
  'payment.proven',
  'payment.proven.reversed',
  'payout.settled',
  'payout.settled.reversed',
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
  await recordEvents(tx, [draft]);
}

/** recordEvent for several events in one round trip (a batch's bookings, DeferredBookings). */
export async function recordEvents(tx: DbExecutor, drafts: readonly EventDraft[]): Promise<void> {
  if (drafts.length === 0) return;
  // The payloads as recordEvent stores them (toJsonb), event n's at index n.
  const payloads = `[${drafts.map((d) => toJsonb(d.data)).join(',')}]`;
  await executePrepared(
    tx,
    sql`insert into event_outbox (event_id, type, occurred_at, payload)
        select x.id, x.type, x.occurred_at, ${payloads}::jsonb -> (x.n - 1)::int
        from unnest(${sql.param(drafts.map((d) => d.id))}::text[], ${sql.param(drafts.map((d) => d.type))}::text[],
                    ${sql.param(drafts.map((d) => d.occurredAt.toISOString()))}::timestamptz[])
             with ordinality as x(id, type, occurred_at, n)
        order by x.n
        on conflict (event_id) do nothing`,
  );
}

/** The token fields every money event carries. */
export function tokenData(token: Token): { chain_id: number; token: string; token_address: string } {
  return { chain_id: token.chainId, token: token.symbol, token_address: token.address.toLowerCase() };
}

/**
 * The id of the n-th announcement of a business fact (`<type>:<subject>`, then `:r<n>` each time
 * it is announced again after a reversal). It names the fact, never the log that proved it: a
 * transaction re-mined at another log index after a reorg is the same payment.
 */
export function announcementId(type: EventType, subject: string, revision: number): string {
  return revision > 0 ? `${type}:${subject}:r${revision}` : `${type}:${subject}`;
}

/** `payment.booked` (rule 1): `payment.booked:<intent>`, and `:r<n>` for a rebooking after a reversal. */
export function paymentBookedId(intentId: string, revision: number): string {
  return announcementId('payment.booked', intentId, revision);
}

/** `payout.settled`: the payout and its outcome, `:r<n>` when settled again after a reversal. */
export function payoutSettledId(payoutId: string, outcome: PayoutOutcome, revision = 0): string {
  return announcementId('payout.settled', `${payoutId}:${outcome}`, revision);
}
