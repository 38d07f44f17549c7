import type { DbExecutor } from '../db/database.ts';
import { type EventDraft, recordEvents } from '../events/recordEvent.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { EntryDraft } from '../ledger/entryDraft.ts';
import { type PostedEntry, postEntries } from '../ledger/postEntry.ts';

interface Deferred {
  entry: EntryDraft;
  /** The event of the entry, written only when the entry is written now (not a replay). */
  event: (posted: PostedEntry) => EventDraft;
}

/**
 * Rule-1 entries of a webhook batch and their `payment.booked` events, held until the batch has
 * applied its intents and then written in two statements (postEntries, recordEvents) instead of
 * two per payment: the round trips were most of the worker's cost per payment (issue 33). The
 * entries still commit in the batch's transaction with the facts they come from.
 *
 * Whoever reads the ledger for a deferred intent flushes first: applyIntentSnapshots before a
 * second observation of an intent, rule 2 before proving a payment. A key that conflicts at the
 * flush (the service's amounts changed since booked) fails the batch's transaction, and the
 * batch's webhooks are then applied one by one, without deferring, where the conflict is a
 * finding (bookConfirmation).
 */
export class DeferredBookings {
  private pending: Deferred[] = [];

  constructor(private readonly accounts: AccountCache | undefined) {}

  add(item: Deferred): void {
    this.pending.push(item);
  }

  async flush(tx: DbExecutor): Promise<void> {
    const items = this.pending;
    if (items.length === 0) return;
    this.pending = [];
    const posted = await postEntries(
      tx,
      items.map((i) => i.entry),
      { accounts: this.accounts },
    );
    const events: EventDraft[] = [];
    items.forEach((item, n) => {
      const entry = posted[n];
      if (entry?.created) events.push(item.event(entry));
    });
    await recordEvents(tx, events);
  }
}
