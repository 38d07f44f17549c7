import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  allocate,
  allocatedTo,
  entryAllocations,
  releaseAllocations,
  transferAllocations,
  unallocated,
} from '../../../src/chain/allocations.ts';
import { account } from '../../../src/ledger/accounts.ts';
import { postEntry, reverseEntry } from '../../../src/ledger/postEntry.ts';
import { createMigratedDatabase, type MigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE } from '../../helpers/tokens.ts';

// The allocations' invariants live in PostgreSQL (migration 0022): these run as the daemon's role.
let database: MigratedDatabase;
let transferId: string;

beforeAll(async () => {
  database = await createMigratedDatabase('allocations');
  const { rows } = await database.db.execute<{ id: string }>(sql`
    insert into chain_transfers (chain_id, tx_hash, log_index, block_number, block_hash, block_time, token,
      from_address, to_address, value, state, source)
    values (1, ${`0x${'a'.repeat(64)}`}, 0, 10, ${`0x${'b'.repeat(64)}`}, now(), ${`0x${'c'.repeat(40)}`},
      ${`0x${'d'.repeat(40)}`}, ${`0x${'e'.repeat(40)}`}, 35000000, 'final', 'logs')
    returning id::text`);
  transferId = rows[0]?.id ?? '';
});

/** Drizzle wraps PostgreSQL's error: the database's own words are its cause. */
async function refused(work: Promise<unknown>, pattern: RegExp): Promise<void> {
  const error = await work.then(
    () => null,
    (e: Error & { cause?: Error }) => e.cause?.message ?? e.message,
  );
  expect(error).toMatch(pattern);
}

const intent = (id: string) => ({ type: 'checkout_intent' as const, id });
const draft = (id: string, amount: bigint) => ({
  transferId,
  side: 'in' as const,
  obligation: intent(id),
  purpose: 'payment' as const,
  amount,
  rule: 'rule 2',
  entryId: null,
  storeId: 'st_a',
});

describe('allocations', () => {
  it('splits one transfer over two intents and refuses more than its value, writing nothing', async () => {
    await database.db.transaction(async (tx) => {
      await allocate(tx, draft('i10', 10_000_000n));
      await allocate(tx, draft('i25', 25_000_000n));
    });
    expect(await unallocated(database.db, transferId, 'in')).toBe(0n);
    await refused(
      database.db.transaction((tx) => allocate(tx, draft('i1', 1n))),
      /allocated 35000001 of its value 35000000/,
    );
    expect(await allocatedTo(database.db, intent('i1'))).toBe(0n);
    expect(await allocatedTo(database.db, intent('i25'), ['payment'])).toBe(25_000_000n);
  });

  it('releases with negated rows, after which the amount can be allocated again', async () => {
    await database.db.transaction(async (tx) => {
      const released = await releaseAllocations(tx, transferId, 'a reorg', { purposes: ['payment'] });
      expect(released.map((a) => a.obligation_id)).toEqual(['i10', 'i25']);
      await allocate(tx, draft('i35', 35_000_000n));
    });
    expect(await allocatedTo(database.db, intent('i25'))).toBe(0n);
    expect((await transferAllocations(database.db, transferId)).map((a) => a.obligation_id)).toEqual(['i35']);
  });

  it('refuses an update, a delete, and a release that does not mirror its allocation', async () => {
    await refused(database.ownerDb.execute(sql`update allocations set amount = 1`), /append-only/);
    await refused(database.ownerDb.execute(sql`delete from allocations`), /append-only/);
    await refused(database.db.execute(sql`delete from allocations`), /permission denied/);
    const [live] = await transferAllocations(database.db, transferId);
    await refused(
      database.db.execute(sql`
        insert into allocations (transfer_id, side, obligation_type, obligation_id, purpose, amount, rule, store_id, releases)
        values (${transferId}::bigint, 'in', 'checkout_intent', 'i35', 'payment', -1, 'rule 2', 'st_a', ${live?.id}::bigint)`),
      /does not mirror/,
    );
    expect(await allocatedTo(database.db, intent('i35'))).toBe(35_000_000n);
  });

  it('releases an allocation when the entry it caused is reversed, whoever reverses it', async () => {
    const entry = await postEntry(database.db, {
      idempotencyKey: 'alloc:suspense',
      kind: 'chain.transfer_in_unmatched',
      occurredAt: new Date('2026-11-10T12:00:00Z'),
      storeId: 'st_a',
      ref: { type: 'chain_transfer', id: transferId },
      lines: [
        { account: account('assets:wallet', 'st_a', USDC_BASE), amount: 5n },
        { account: account('assets:suspense', 'st_a', USDC_BASE), amount: -5n },
      ],
    });
    await database.db.transaction(async (tx) => {
      await releaseAllocations(tx, transferId, 'make room');
      await allocate(tx, {
        ...draft('x', 5n),
        obligation: { type: 'suspense', id: transferId },
        purpose: 'unmatched',
        entryId: entry.id,
      });
    });
    expect(await allocatedTo(database.db, { type: 'suspense', id: transferId })).toBe(5n);
    // What `ledger entries --explain` prints beside the entry: the transfer it rests on.
    const [basis] = await entryAllocations(database.db, [entry.id]);
    expect(basis).toMatchObject({
      transfer: `1:0x${'a'.repeat(64)}:0`,
      side: 'in',
      obligation_type: 'suspense',
      purpose: 'unmatched',
      amount: '5',
      released: null,
    });
    const reversal = await reverseEntry(database.db, entry.id, 'a rule explained it');
    expect(await allocatedTo(database.db, { type: 'suspense', id: transferId })).toBe(0n);
    expect(await unallocated(database.db, transferId, 'in')).toBe(35_000_000n);
    const [after] = await entryAllocations(database.db, [entry.id]);
    expect(after?.released).toBe(`entry ${entry.id} reversed by entry ${reversal.id}`);
  });
});
