import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { AccountKind, Token } from '../ledger/accounts.ts';
import type { PostedEntry } from '../ledger/postEntry.ts';
import { reversalCount } from '../ledger/reversalCount.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { announcementId, type EventType, recordEvent, tokenData } from './recordEvent.ts';

/**
 * Announcements and their reversals (README, "Outbound events"; docs/decisions.md, "Events a
 * consumer can sum"). The revisions are read from the ledger, never from the outbox, which is
 * pruned: a reversal weeks after its booking still names the announcement it takes back.
 */

type Ref = { type: string; id: string };

/** The fact types a reversal can take back, and the type of that reversal. */
const REVERSED = {
  'payment.booked': 'payment.booked.reversed',
  'payment.proven': 'payment.proven.reversed',
  'payout.settled': 'payout.settled.reversed',
} as const satisfies Record<string, EventType>;
export type AnnouncedType = keyof typeof REVERSED;

/**
 * Which announcement of its fact the booking that wrote `entryId` was: how many entries of `kind`
 * about `ref` earlier bookings (transactions) wrote. A proof booked in pieces over several passes
 * is several announcements, each with a revision of its own; all entries one transaction wrote are
 * one.
 */
export async function bookingRevision(
  tx: DbExecutor,
  ref: Ref,
  kind: string,
  entryId: bigint,
): Promise<number> {
  const { rows } = await tx.execute<{ n: number }>(sql`
    with booking as (
      select min(e.id) as first_id from ledger_entries e
      where e.ref_type = ${ref.type} and e.ref_id = ${ref.id} and e.kind = ${kind}
        and e.tx_id = (select tx_id from ledger_entries where id = ${entryId.toString()}::bigint))
    select count(*)::int as n from ledger_entries e, booking
    where e.ref_type = ${ref.type} and e.ref_id = ${ref.id} and e.kind = ${kind} and e.id < booking.first_id`);
  return rows[0]?.n ?? 0;
}

/** What an entry moved on its account of `kind` (e.g. the wallet a proof debited), and in which token. */
export async function entryMoved(
  tx: DbExecutor,
  /** The chain registry's lookup (config sits above events: only its shape is named here). */
  chains: { token(chainId: number, address: string): Token | undefined },
  entryId: bigint,
  kind: AccountKind,
): Promise<{ token: Token; units: bigint } | null> {
  const { rows } = await tx.execute<{ asset: string; units: string }>(sql`
    select p.asset, sum(p.amount)::text as units from ledger_postings p
    join ledger_accounts a on a.id = p.account_id
    where p.entry_id = ${entryId.toString()}::bigint and a.code like ${`${kind}:%`}
    group by p.asset`);
  const row = rows[0];
  if (!row) return null;
  const [chainId, address] = row.asset.split(':');
  const token = chains.token(Number(chainId), address ?? '');
  if (!token) return null;
  const units = BigInt(row.units);
  return { token, units: units < 0n ? -units : units };
}

/**
 * The token fields and amount of a reversal event, from what the reversed entry moved: `field`
 * is the name its announcement gave that amount (`net_amount` for payment.booked).
 */
export function movedData(
  moved: { token: Token; units: bigint } | null,
  field = 'amount',
): Record<string, unknown> {
  if (!moved) return {};
  return { ...tokenData(moved.token), [field]: formatDecimalAmount(moved.units, moved.token.decimals) };
}

/**
 * Writes the event that takes back announcement `reversedRevision` of a fact, in the transaction
 * of the reversal entry (nothing when that entry was written before: a replay). Its id counts the
 * reversals of `kind` about `ref` before this one, so each reversal has its own.
 */
export async function recordReversal(
  tx: DbExecutor,
  o: {
    type: AnnouncedType;
    /** The fact's subject in its ids: the intent, or `<payout>:<outcome>`. */
    subject: string;
    ref: Ref;
    /** The kind of the reversed entries (`chain.payment_proven`, ...). */
    kind: string;
    reversedRevision: number;
    reversedEntryId: bigint;
    reversal: PostedEntry;
    occurredAt: Date;
    reason: string;
    data: Record<string, unknown>;
  },
): Promise<void> {
  if (!o.reversal.created) return;
  const k = await reversalCount(tx, o.ref, o.kind, o.reversal.id);
  const type = REVERSED[o.type];
  await recordEvent(tx, {
    id: announcementId(type, o.subject, k),
    type,
    occurredAt: o.occurredAt,
    data: {
      ...o.data,
      reverses: announcementId(o.type, o.subject, o.reversedRevision),
      entry_id: o.reversal.id.toString(),
      reversed_entry_id: o.reversedEntryId.toString(),
      reason: o.reason,
    },
  });
}
