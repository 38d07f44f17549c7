import { sql } from 'drizzle-orm';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { chainHead } from '../../../src/ledger/chainHead.ts';
import type { EntryDraft } from '../../../src/ledger/entryDraft.ts';
import { postEntry } from '../../../src/ledger/postEntry.ts';
import { GENESIS_HASH } from '../../../src/ledger/sealContent.ts';
import { sealBacklog, sealLedger } from '../../../src/ledger/sealLedger.ts';
import { verifyLedgerChain } from '../../../src/ledger/verifyLedgerChain.ts';
import { rewriteLedgerAsOwner } from '../../helpers/ownerRewrite.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';

/**
 * The entries' hash chain on real PostgreSQL: the sealer's order under concurrent and late
 * commits, and a rewrite by the schema's owner with the ledger's triggers off, found by
 * recomputing the chain.
 */
const { db, pool, url, ownerUrl } = await createMigratedDatabase('ledger_chain', { max: 16 });

let n = 0;
function payment(storeId = 'st_a'): EntryDraft {
  n += 1;
  const token = n % 3 === 0 ? USDT_BNB : USDC_BASE;
  const requested = BigInt(1_000 + n) * 10n ** BigInt(token.decimals - 2);
  return {
    idempotencyKey: `checkout:confirmed:chain-${n}`,
    kind: 'checkout.confirmed',
    occurredAt: new Date(Date.UTC(2026, 10, 1) + n * 1000),
    storeId,
    ref: { type: 'checkout_intent', id: `chain-${n}` },
    memo: `payment ${n}`,
    metadata: { n, big: '123456789012345678901234567890' },
    lines: [
      { account: account('assets:in_transit', storeId, token), amount: requested - 1n },
      { account: account('expense:service_fees', storeId, token), amount: 1n },
      { account: account('income:sales', storeId, token), amount: -requested },
    ],
  };
}

async function seals(): Promise<{ seq: string; entry_id: string; prev_hash: string; hash: string }[]> {
  const { rows } = await db.execute<{ seq: string; entry_id: string; prev_hash: string; hash: string }>(sql`
    select s.seq::text, s.entry_id::text, s.prev_hash, s.hash from ledger_seals s order by s.seq`);
  return rows;
}

async function entriesInTxOrder(): Promise<string[]> {
  const { rows } = await db.execute<{ id: string }>(
    sql`select id::text from ledger_entries order by tx_id, id`,
  );
  return rows.map((r) => r.id);
}

describe('the ledger hash chain', () => {
  it('behavior: seals every committed entry once in (tx_id, id) order, linked from the genesis hash; a second run seals nothing', async () => {
    await db.transaction(async (tx) => {
      await postEntry(tx, payment());
      await postEntry(tx, payment());
    });
    await postEntry(db, payment());
    const first = await sealLedger(db);
    expect(first).toMatchObject({ ran: true, sealed: 3, unsealed: 0, lagSeconds: 0 });
    const chain = await seals();
    expect(chain.map((s) => s.entry_id)).toEqual(await entriesInTxOrder());
    expect(chain.map((s) => s.seq)).toEqual(['1', '2', '3']);
    expect(chain[0]?.prev_hash).toBe(GENESIS_HASH);
    for (let i = 1; i < chain.length; i++) expect(chain[i]?.prev_hash).toBe(chain[i - 1]?.hash);

    const again = await sealLedger(db);
    expect(again).toMatchObject({ ran: true, sealed: 0 });
    expect(again.head?.hash).toBe(chain[2]?.hash);
    expect(await seals()).toEqual(chain);
    expect(await verifyLedgerChain(db)).toMatchObject({ ok: true, verified: 3, broken: null });
  });

  it('behavior: an entry of a transaction still open holds the sealer back; once it commits it is sealed first, before a later-numbered entry that committed earlier', async () => {
    // The open transaction takes its id before the other entry is posted, and its entry's id after.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query('begin');
      await client.query('select pg_current_xact_id()');
      const early = payment();
      const late = await postEntry(db, payment());
      const blocked = await sealLedger(db);
      expect(blocked.sealed).toBe(0);
      expect(blocked.unsealed).toBe(1);
      expect(await sealBacklog(db)).toMatchObject({ unsealed: 1 });

      const openDb = (await import('drizzle-orm/node-postgres')).drizzle(client);
      const posted = await postEntry(openDb, early);
      await client.query('commit');
      expect(posted.id > late.id).toBe(true);

      const run = await sealLedger(db);
      expect(run.sealed).toBe(2);
      const chain = await seals();
      expect(chain.slice(-2).map((s) => s.entry_id)).toEqual([posted.id.toString(), late.id.toString()]);
      expect(await verifyLedgerChain(db)).toMatchObject({ ok: true, verified: 5 });
    } finally {
      await client.end();
    }
  });

  it('behavior: 6 posters and 2 sealers at once: every entry sealed exactly once and the chain verifies', async () => {
    // st_b's accounts first: posters creating the same new accounts at once can deadlock, which is
    // not what this test is about.
    for (let i = 0; i < 3; i++) await postEntry(db, payment('st_b'));
    let posting = true;
    const sealers = Array.from({ length: 2 }, async () => {
      let runs = 0;
      while (posting) {
        const r = await sealLedger(db, { batch: 50 });
        if (r.ran) runs++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return runs;
    });
    try {
      await Promise.all(
        Array.from({ length: 6 }, async (_, w) => {
          for (let i = 0; i < 150; i++) {
            const draft = payment(w % 2 === 0 ? 'st_a' : 'st_b');
            await db.transaction(async (tx) => {
              await postEntry(tx, draft);
              if (i % 10 === 0) await postEntry(tx, payment(draft.storeId));
            });
          }
        }),
      );
    } finally {
      posting = false;
    }
    expect((await Promise.all(sealers)).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    while ((await sealLedger(db)).sealed > 0);

    const total = 5 + 3 + 6 * 165;
    const { rows } = await db.execute<{
      entries: number;
      sealed: number;
      distinct_entries: number;
      top: number;
    }>(sql`
      select (select count(*)::int from ledger_entries) as entries, (select count(*)::int from ledger_seals) as sealed,
             (select count(distinct entry_id)::int from ledger_seals) as distinct_entries,
             (select max(seq)::int from ledger_seals) as top`);
    expect(rows[0]).toEqual({ entries: total, sealed: total, distinct_entries: total, top: total });
    expect(await verifyLedgerChain(db)).toMatchObject({ ok: true, verified: total, broken: null });
    expect(await sealBacklog(db)).toEqual({ unsealed: 0, lagSeconds: 0 });
  }, 120_000);

  it('error: ledger_seals is append-only like the ledger (for its owner by triggers, for the daemon by its grants)', async () => {
    const owner = new pg.Pool({ connectionString: ownerUrl, max: 1 });
    try {
      await expect(
        owner.query(`update ledger_seals set hash = repeat('0', 64) where seq = 1`),
      ).rejects.toThrow(/UPDATE on ledger_seals is not allowed/);
      await expect(owner.query('delete from ledger_seals where seq = 1')).rejects.toThrow(
        /DELETE on ledger_seals is not allowed/,
      );
      await expect(owner.query('truncate ledger_seals')).rejects.toThrow(
        /TRUNCATE on ledger_seals is not allowed/,
      );
    } finally {
      await owner.end();
    }
    for (const statement of [
      `update ledger_seals set hash = repeat('0', 64) where seq = 1`,
      'delete from ledger_seals where seq = 1',
      'truncate ledger_seals',
    ])
      await expect(pool.query(statement)).rejects.toThrow(/permission denied for table ledger_seals/);
  });

  it('behavior: one entry rewritten by the owner with the triggers off is named, with the seals before it still matching', async () => {
    const chain = await seals();
    const target = chain[99];
    if (!target) throw new Error('the chain is shorter than expected');
    await rewriteLedgerAsOwner(ownerUrl, `id = ${target.entry_id}`);
    const v = await verifyLedgerChain(db);
    expect(v.ok).toBe(false);
    expect(v.verified).toBe(99);
    expect(v.broken).toMatchObject({
      seq: 100n,
      entryId: BigInt(target.entry_id),
      kind: 'checkout.confirmed',
      reason: `entry ${target.entry_id} or its postings differ from what seal 100 covers`,
    });
    expect(v.broken?.ref?.type).toBe('checkout_intent');
    // The sealer does not paper over it: the rewritten entry keeps its seal, nothing is resealed.
    expect((await sealLedger(db)).sealed).toBe(0);
  });

  it("behavior: the issue's rewrite of every entry is found at the first seal; resealing the whole chain is caught by a head published before", async () => {
    const published = await chainHead(db);
    if (!published) throw new Error('no chain head');
    await rewriteLedgerAsOwner(ownerUrl);
    const [first] = await seals();
    const v = await verifyLedgerChain(db);
    expect(v).toMatchObject({ ok: false, verified: 0 });
    expect(v.broken?.entryId?.toString()).toBe(first?.entry_id);

    // The owner goes further: drops the seals (triggers off) and lets the sealer rebuild the chain
    // over the rewritten entries. The database is consistent again; the published head is not.
    const client = new pg.Client({ connectionString: ownerUrl });
    await client.connect();
    await client.query(
      'begin; alter table ledger_seals disable trigger user; delete from ledger_seals; alter table ledger_seals enable trigger user; commit;',
    );
    await client.end();
    while ((await sealLedger(db)).sealed > 0);
    expect(await verifyLedgerChain(db)).toMatchObject({ ok: true });
    const checked = await verifyLedgerChain(db, { expectHead: published });
    expect(checked.ok).toBe(false);
    expect(checked.broken?.seq).toBe(published.seq);
    expect(checked.broken?.reason).toContain(`not the published ${published.seq}:${published.hash}`);
  });
});
