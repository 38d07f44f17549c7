import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { recordFinding, resolveFinding } from '../../../src/findings/recordFinding.ts';
import { createAccountCache } from '../../../src/ledger/ensureAccounts.ts';
import { parseDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { applyIntentSnapshot } from '../../../src/payments/applyIntentSnapshot.ts';
import { proveIntentPayment } from '../../../src/payments/proveIntentPayment.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { BASE_USDC, confirmedIntent, TEST_MERCHANT } from '../../helpers/confirmedIntent.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * The outbox (src/events): each event is written in the transaction of the booking that causes it,
 * once per cause, whatever retries or replays follow; the findings events by the triggers of
 * migrations/0014_event_outbox.sql, for every writer of findings.
 */
const { db } = await createMigratedDatabase('event_outbox');
const USDC = BASE_USDC;
const MERCHANT = TEST_MERCHANT;
const stores = [
  {
    storeId: 'st_a',
    wallets: new Map([[8453, { merchant: MERCHANT, custody: `0x${'cc'.repeat(20)}` as const }]]),
  },
];
const deps = { chains: createChainRegistry(), stores, accounts: createAccountCache() };
const at = (s: number) => new Date(Date.UTC(2026, 10, 20, 12, 0, s));

const intent = confirmedIntent;

function poll(id: string, patch: Partial<CheckoutIntent>, s: number) {
  return db.transaction((tx) =>
    applyIntentSnapshot(tx, deps, {
      storeId: 'st_a',
      intent: intent(id, patch),
      source: 'poll',
      observedAt: at(s),
    }),
  );
}

type OutboxRow = { event_id: string; type: string; occurred_at: string; payload: Record<string, unknown> };

async function eventsAbout(ref: string): Promise<OutboxRow[]> {
  const { rows } = await db.execute<OutboxRow>(sql`
    select event_id, type, events_utc(occurred_at) as occurred_at, payload from event_outbox
    where payload->>'intent_id' = ${ref} or payload->'ref'->>'id' = ${ref} order by id`);
  return rows;
}

describe('the event outbox', () => {
  it('behavior: a booking retried (the same read five times, a webhook, a concurrent observer) writes one payment.booked', async () => {
    const id = 'ev0000000000000000000001';
    expect((await poll(id, {}, 1)).posted?.created).toBe(true);
    for (let i = 0; i < 5; i++) await poll(id, {}, 2 + i);
    await Promise.all([poll(id, {}, 10), poll(id, {}, 11)]);
    const events = await eventsAbout(id);
    expect(events.map((e) => e.event_id)).toEqual([`payment.booked:${id}`]);
    expect(events[0]).toMatchObject({
      type: 'payment.booked',
      occurred_at: at(1).toISOString(),
      payload: {
        intent_id: id,
        store_id: 'st_a',
        revision: 0,
        chain_id: 8453,
        token: 'USDC',
        token_address: USDC,
        amount: '25',
        paid_amount: '25',
        fee_amount: '0.25',
        net_amount: '24.75',
        amount_cents: '2500',
        currency: 1,
        tx_hash: `0x${'2'.repeat(64)}`,
      },
    });
  });

  it('behavior: a booking rolled back leaves no event (the event is written in its transaction)', async () => {
    const id = 'ev0000000000000000000002';
    await expect(
      db.transaction(async (tx) => {
        await applyIntentSnapshot(tx, deps, {
          storeId: 'st_a',
          intent: intent(id),
          source: 'poll',
          observedAt: at(1),
        });
        throw new Error('the job dies before its commit');
      }),
    ).rejects.toThrow('dies');
    const entries = await db.execute(sql`select 1 from ledger_entries where ref_id = ${id}`);
    expect(entries.rows).toEqual([]);
    expect(await eventsAbout(id)).toEqual([]);
    // Run again, it commits: one event.
    await poll(id, {}, 2);
    expect((await eventsAbout(id)).map((e) => e.event_id)).toEqual([`payment.booked:${id}`]);
  });

  it('behavior: rule 2 writes payment.proven once; a failure after it is payment.booked.reversed, the rebooking payment.booked :r1', async () => {
    const id = 'ev0000000000000000000003';
    const sweep = `0x${'e5'.repeat(32)}`;
    await poll(id, { tx_hash_2: sweep }, 1);
    await db.execute(sql`
      insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
                                   from_address, to_address, value, state, source, final_at)
      values (8453, ${sweep}, 3, 901, ${`0x${'b5'.repeat(32)}`}, ${at(5).toISOString()}::timestamptz, ${USDC},
              ${`0x${'cd'.repeat(20)}`}, ${MERCHANT}, 24750000, 'final', 'logs', now())`);
    expect((await db.transaction((tx) => proveIntentPayment(tx, deps, id))).proven?.created).toBe(true);
    await db.transaction((tx) => proveIntentPayment(tx, deps, id));
    await poll(id, { tx_hash_2: sweep, status: -4 }, 6);
    await poll(id, { tx_hash_2: sweep }, 7);
    await poll(id, { tx_hash_2: sweep }, 8);
    const events = await eventsAbout(id);
    expect(events.filter((e) => e.type.startsWith('payment.')).map((e) => e.event_id)).toEqual([
      `payment.booked:${id}`,
      `payment.proven:${id}`,
      `payment.booked.reversed:${id}`,
      `payment.booked:${id}:r1`,
    ]);
    expect(events.find((e) => e.type === 'payment.proven')).toMatchObject({
      occurred_at: at(5).toISOString(),
      payload: {
        amount: '24.75',
        paid_amount: '24.75',
        expected_amount: '24.75',
        mismatch: false,
        log_indexes: [3],
        block_number: 901,
        revision: 0,
      },
    });
    // The reversal names what it takes back and its amount, as payment.booked named it.
    expect(events.find((e) => e.type === 'payment.booked.reversed')).toMatchObject({
      occurred_at: at(6).toISOString(),
      payload: { reverses: `payment.booked:${id}`, net_amount: '24.75', token: 'USDC', status: -4 },
    });
    // A consumer's sum of net_amount over the booked events (each reversal taking back its own)
    // is what the ledger holds in in_transit's booked side: one live booking.
    const net = events
      .filter((e) => e.type === 'payment.booked' || e.type === 'payment.booked.reversed')
      .map(
        (e) => (e.type === 'payment.booked' ? 1n : -1n) * parseDecimalAmount(String(e.payload.net_amount), 6),
      );
    expect(net.reduce((a, b) => a + b, 0n)).toBe(24_750_000n);
    // The failure's findings were opened in the same transactions, by the trigger.
    expect(events.filter((e) => e.type === 'finding.opened').map((e) => e.payload.kind)).toContain(
      'confirmed_then_failed',
    );
  });

  it('behavior: finding.opened once per finding (a refresh is none), finding.resolved once; a new finding after that is a new event', async () => {
    const ref = { type: 'checkout_intent', id: 'ev-finding-1' };
    const draft = { kind: 'reorged_transfer' as const, severity: 'warning' as const, ref, details: { n: 1 } };
    await db.transaction((tx) => recordFinding(tx, draft, 'st_a'));
    await db.transaction((tx) => recordFinding(tx, { ...draft, details: { n: 2 } }, 'st_a'));
    await db.transaction((tx) => resolveFinding(tx, 'reorged_transfer', ref));
    await db.transaction((tx) => resolveFinding(tx, 'reorged_transfer', ref));
    // A raw resolve (as recon and the proof's own statements do) is seen too.
    await db.transaction((tx) => recordFinding(tx, draft, null));
    await db.execute(
      sql`update findings set resolved_at = now() where ref_id = ${ref.id} and resolved_at is null`,
    );
    const { rows: ids } = await db.execute<{ id: string }>(
      sql`select id::text from findings where ref_id = ${ref.id} order by id`,
    );
    const [first, second] = ids.map((r) => r.id);
    const events = await eventsAbout(ref.id);
    expect(events.map((e) => e.event_id)).toEqual([
      `finding.opened:${first}`,
      `finding.resolved:${first}`,
      `finding.opened:${second}`,
      `finding.resolved:${second}`,
    ]);
    expect(events[0]?.payload).toMatchObject({
      finding_id: first,
      kind: 'reorged_transfer',
      severity: 'warning',
      store_id: 'st_a',
      ref,
      details: { n: 1 },
      resolved_at: null,
    });
    expect(String(events[1]?.payload.resolved_at)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // A rolled-back finding writes no event either.
    await expect(
      db.transaction(async (tx) => {
        await recordFinding(tx, { ...draft, ref: { type: 'x', id: 'ev-rolled-back' } }, null);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow();
    expect(await eventsAbout('ev-rolled-back')).toEqual([]);
  });
});
