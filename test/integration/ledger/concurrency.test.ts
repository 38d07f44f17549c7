import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { balances, checkpointBalances, trialBalance } from '../../../src/ledger/balances.ts';
import type { EntryDraft } from '../../../src/ledger/entryDraft.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';

const { db } = await createMigratedDatabase('ledger_concurrency', { max: 12 });

const WRITERS = 8;
const PER_WRITER = 1000;

/** Entry n: a payment touching the same hot accounts (in transit, fees, sales) as every other. */
function payment(n: number): EntryDraft {
  const token = n % 3 === 0 ? USDT_BNB : USDC_BASE;
  const requested = BigInt(1_000 + n) * 10n ** BigInt(token.decimals - 2);
  const fee = BigInt(n % 7) + 1n;
  return {
    idempotencyKey: `checkout:confirmed:c-${n}`,
    kind: 'checkout.confirmed',
    occurredAt: new Date(Date.UTC(2026, 10, 1) + n * 1000),
    storeId: 'st_hot',
    ref: { type: 'checkout_intent', id: `c-${n}` },
    lines: [
      { account: account('assets:in_transit', 'st_hot', token), amount: requested - fee },
      { account: account('expense:service_fees', 'st_hot', token), amount: fee },
      { account: account('income:sales', 'st_hot', token), amount: -requested },
    ],
  };
}

describe('ledger under concurrent writers', () => {
  it('behavior: 8 writers x 1,000 entries with duplicates give exactly the expected entries and a zero trial balance', async () => {
    // Each writer posts its own 1,000 entries and, interleaved, re-posts 100 keys that belong to
    // the next writer, so the same key is often posted twice at the same moment.
    const outcomes = await Promise.all(
      Array.from({ length: WRITERS }, async (_, w) => {
        let created = 0;
        let replayed = 0;
        for (let i = 0; i < PER_WRITER; i++) {
          const n = w * PER_WRITER + i;
          const jobs = [payment(n)];
          if (i % 10 === 0) jobs.push(payment(((w + 1) % WRITERS) * PER_WRITER + i));
          for (const draft of jobs) {
            const posted = await db.transaction((tx) => postEntry(tx, draft));
            if (posted.created) created++;
            else replayed++;
          }
        }
        return { created, replayed };
      }),
    );
    const created = outcomes.reduce((s, o) => s + o.created, 0);
    const replayed = outcomes.reduce((s, o) => s + o.replayed, 0);
    expect(created).toBe(WRITERS * PER_WRITER);
    expect(replayed).toBe(WRITERS * (PER_WRITER / 10));

    const counts = await db.execute<{ entries: number; postings: number }>(sql`
      select (select count(*)::int from ledger_entries) as entries, (select count(*)::int from ledger_postings) as postings`);
    expect(counts.rows[0]).toEqual({ entries: WRITERS * PER_WRITER, postings: 3 * WRITERS * PER_WRITER });

    for (const line of await trialBalance(db)) expect(line.net).toBe(0n);

    // Every posting landed: sales equals the sum of what was requested, per token.
    const expected = new Map<string, bigint>();
    for (let n = 0; n < WRITERS * PER_WRITER; n++) {
      const sales = payment(n).lines[2]!;
      const code = `income:sales:st_hot:${sales.account.token.chainId}:${sales.account.token.symbol}`;
      expected.set(code, (expected.get(code) ?? 0n) + sales.amount);
    }
    await checkpointBalances(db);
    const actual = new Map((await balances(db, { storeId: 'st_hot' })).map((b) => [b.code, b.balance]));
    for (const [code, sum] of expected) expect(actual.get(code)).toBe(sum);
  }, 180_000);
});
