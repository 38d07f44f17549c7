import type { DbExecutor } from '../../src/db/database.ts';
import { type AccountKind, account, type Token } from '../../src/ledger/accounts.ts';
import { postEntry } from '../../src/ledger/postEntry.ts';

/**
 * Posts an entry by hand, dated noon UTC of `day`, in one token: the small ledgers of the
 * valuation tests, whose rates are per day. Kind `checkout.confirmed` and the key as the intent
 * unless said otherwise.
 */
export async function postOnDay(
  db: DbExecutor,
  entry: {
    key: string;
    day: string;
    storeId: string;
    token: Token;
    lines: ReadonlyArray<readonly [AccountKind, bigint]>;
    kind?: string;
    intentId?: string;
    metadata?: Record<string, unknown>;
  },
): Promise<void> {
  await postEntry(db, {
    idempotencyKey: entry.key,
    kind: entry.kind ?? 'checkout.confirmed',
    occurredAt: new Date(`${entry.day}T12:00:00Z`),
    storeId: entry.storeId,
    ref: { type: 'checkout_intent', id: entry.intentId ?? entry.key },
    lines: entry.lines.map(([kind, amount]) => ({
      account: account(kind, entry.storeId, entry.token),
      amount,
    })),
    metadata: entry.metadata,
  });
}

/**
 * postOnDay for one store, with positional arguments and account kinds as text: the shape the
 * valuation tests' ledgers are written in.
 */
export function storePoster(db: DbExecutor, storeId: string) {
  return (
    key: string,
    day: string,
    token: Token,
    lines: [string, bigint][],
    metadata?: Record<string, unknown>,
  ): Promise<void> =>
    postOnDay(db, { key, day, storeId, token, lines: lines as [AccountKind, bigint][], metadata });
}
