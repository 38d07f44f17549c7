import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { formatDecimalAmount } from '../../../src/money/decimalAmount.ts';
import { buildReport } from '../../../src/recon/report/buildReport.ts';
import { renderMarkdown } from '../../../src/recon/report/renderMarkdown.ts';
import { classifySuspense, unclassifySuspense } from '../../../src/suspense/classifySuspense.ts';
import { listSuspenseItems } from '../../../src/suspense/suspenseItems.ts';
import { CheckoutStatus } from '../../../src/svc/models/checkoutStatus.ts';
import { CUSTODY, createSuspenseKit, MERCHANT, STRANGER, USDT } from './suspenseKit.ts';

/**
 * Rule 10 (docs/accounting.md): a person classifies money rule 9 booked to suspense, through the
 * real settlement on a migrated PostgreSQL. Each test books its own transfers; the ledger's figures
 * are compared as differences, since the tests share one database.
 */
const kit = await createSuspenseKit('suspense_classify');
const { db } = kit.db;
const at = new Date('2026-11-20T12:00:00Z');

function classify(
  item: string,
  as: Parameters<typeof classifySuspense>[1]['classification'],
  note = 'checked',
) {
  return db.transaction((tx) => classifySuspense(tx, { item, classification: as, note, by: 'alice', at }));
}

function unclassify(item: string, note = 'wrong call') {
  return db.transaction((tx) =>
    unclassifySuspense(tx, { item, note, by: 'bob', at: new Date(at.getTime() + 60_000) }),
  );
}

async function snapshot() {
  return {
    suspense: await kit.balance('assets:suspense'),
    contributions: await kit.balance('equity:owner_contributions'),
    refunds: await kit.balance('liability:refunds_payable'),
    other: await kit.balance('income:other'),
    custody: await kit.balance('assets:custody'),
    wallet: await kit.balance('assets:wallet'),
  };
}

describe('classifying an item in suspense', () => {
  it('behavior: the owner’s top-up of custody leaves suspense for equity, the finding resolves; unclassify puts both back; a second classification books under :r1', async () => {
    const topUp = await kit.transfer(STRANGER, CUSTODY, 1_000_000_000n);
    await kit.settle();
    const before = await snapshot();
    const [item] = (await listSuspenseItems(db)).filter((i) => i.transferId === topUp.id);
    expect(item).toMatchObject({
      walletRole: 'custody',
      amount: 1_000_000_000n,
      direction: 'in',
      classification: null,
    });
    expect(await kit.findings(topUp.id)).toEqual([{ kind: 'unmatched_transfer_in', open: true }]);

    const outcome = await classify(topUp.id, 'owner_contribution', 'the owner funded custody');
    expect(outcome.kind).toBe('classified');
    const after = await snapshot();
    expect(after.suspense - before.suspense).toBe(1_000_000_000n); // its credit is cleared
    expect(after.contributions - before.contributions).toBe(-1_000_000_000n); // equity in credit
    expect(after.custody).toBe(before.custody); // the wallet's account, hence its proof, is untouched
    expect(await kit.trialIsZero()).toBe(true);
    expect(await kit.findings(topUp.id)).toEqual([{ kind: 'unmatched_transfer_in', open: false }]);
    expect((await listSuspenseItems(db)).some((i) => i.transferId === topUp.id)).toBe(false);
    const listed = (await listSuspenseItems(db, { all: true })).find((i) => i.transferId === topUp.id);
    expect(listed?.classification).toMatchObject({
      classification: 'owner_contribution',
      classifiedBy: 'alice',
      note: 'the owner funded custody',
    });

    const undone = await unclassify(topUp.txHash);
    expect(undone.reversed).toBe('owner_contribution');
    expect(await snapshot()).toEqual(before);
    expect(await kit.trialIsZero()).toBe(true);
    expect(await kit.findings(topUp.id)).toEqual([
      { kind: 'unmatched_transfer_in', open: false },
      { kind: 'unmatched_transfer_in', open: true },
    ]);
    const { rows } = await db.execute<{ reversed_by: string; reversal_note: string }>(
      sql`select reversed_by, reversal_note from suspense_classifications where suspense_entry_id = ${item!.entryId.toString()}::bigint`,
    );
    expect(rows).toEqual([{ reversed_by: 'bob', reversal_note: 'wrong call' }]);

    // Classified again after the undo: a key of its own.
    await classify(item!.entryId.toString(), 'income_other', 'a grant, after all');
    const keys = await db.execute<{ idempotency_key: string; kind: string }>(sql`
      select idempotency_key, kind from ledger_entries where kind like 'suspense.classified%' and ref_id = ${topUp.id} order by id`);
    expect(keys.rows).toEqual([
      { idempotency_key: `suspense:classified:${item!.entryId}`, kind: 'suspense.classified' },
      {
        idempotency_key: `reversal:suspense:classified:${item!.entryId}`,
        kind: 'suspense.classified.reversal',
      },
      { idempotency_key: `suspense:classified:${item!.entryId}:r1`, kind: 'suspense.classified' },
    ]);
    expect((await snapshot()).other - before.other).toBe(-1_000_000_000n);
    expect(await kit.trialIsZero()).toBe(true);
  });

  it('behavior: classifying twice books once: the same classification is a no-op, another is refused', async () => {
    const stray = await kit.transfer(STRANGER, MERCHANT, 25_000_000n);
    await kit.settle();
    const first = await classify(stray.id, 'refund_due', 'a stranger, to be paid back');
    expect(first.kind).toBe('classified');
    const state = await kit.state();
    const again = await Promise.all([
      classify(stray.id, 'refund_due', 'twice'),
      classify(stray.id, 'refund_due', 'thrice'),
    ]);
    expect(again.map((o) => o.kind)).toEqual(['unchanged', 'unchanged']);
    await expect(classify(stray.id, 'income_other')).rejects.toThrow(
      /is already classified as refund_due by alice at .*; unclassify it first$/,
    );
    expect(await kit.state()).toEqual(state);
    expect(await kit.balance('liability:refunds_payable')).toBeLessThanOrEqual(-25_000_000n);
  });

  it('behavior: two classifications of one item at once book one entry', async () => {
    const stray = await kit.transfer(STRANGER, MERCHANT, 7_000_000n);
    await kit.settle();
    const outcomes = await Promise.allSettled([
      classify(stray.id, 'income_other'),
      classify(stray.id, 'refund_due'),
      classify(stray.id, 'income_other'),
    ]);
    const { rows } = await db.execute<{ n: number }>(sql`
      select count(*)::int as n from ledger_entries where kind = 'suspense.classified' and ref_id = ${stray.id}`);
    expect(rows[0]?.n).toBe(1);
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.kind === 'classified')).toHaveLength(1);
    // The others waited for the first (the item's lock) and then saw it: the same classification
    // is unchanged, the other one refused cleanly, never an idempotency conflict or a duplicate key.
    for (const o of outcomes) {
      if (o.status === 'fulfilled') expect(['classified', 'unchanged']).toContain(o.value.kind);
      else expect(o.reason).toMatchObject({ name: 'SuspenseItemError', reason: 'already_classified' });
    }
    expect(await kit.trialIsZero()).toBe(true);
  });

  it('error: an unknown item, a bad reference, an item not classified, a wrong direction or an empty note change nothing', async () => {
    const stray = await kit.transfer(STRANGER, MERCHANT, 3_000_000n);
    await kit.settle();
    const state = await kit.state();
    await expect(classify(`0x${'0f'.repeat(32)}`, 'income_other')).rejects.toThrow(
      /^no item in suspense matches "0x0f0f.*" \(see stablebooks suspense list --all\)$/,
    );
    await expect(classify('not-a-ref', 'income_other')).rejects.toThrow(/names no suspense item/);
    await expect(classify(stray.id, 'owner_withdrawal')).rejects.toThrow(
      /owner_withdrawal cannot explain money into a wallet; use owner_contribution, refund_due, income_other$/,
    );
    await expect(classify(stray.id, 'income_other', '   ')).rejects.toThrow('--note: must say something');
    await expect(unclassify(stray.id)).rejects.toThrow(/is not classified; nothing to undo$/);
    expect(await kit.state()).toEqual(state);
  });
});

describe('a rule explains a classified transfer later', () => {
  it('behavior: rule 2 proves the payment: the classification is reversed with the suspense entry, nothing is counted twice', async () => {
    const paid = await kit.transfer(STRANGER, MERCHANT, 40_000_000n);
    await kit.settle(); // no intent known after the grace: rule 9
    const before = await snapshot();
    await classify(paid.id, 'income_other', 'looked like a tip');
    await kit.confirm('ci_late', paid.txHash, '40'); // the intent, confirmed late: rule 1, then rule 2
    const after = await snapshot();
    expect(after.other).toBe(before.other); // the classification is undone
    expect(after.suspense - before.suspense).toBe(40_000_000n); // the rule-9 entry is reversed
    expect(after.wallet).toBe(before.wallet); // the wallet holds the money once
    expect(await kit.balance('income:sales')).toBeLessThanOrEqual(-40_000_000n);
    expect(await kit.trialIsZero()).toBe(true);
    expect((await kit.findings(paid.id)).map((f) => `${f.kind} ${f.open}`)).toEqual([
      'unmatched_transfer_in false',
      'suspense_classification_superseded true',
    ]);
    const { rows } = await db.execute<{ reversed_by: string; reversal_note: string }>(sql`
      select c.reversed_by, c.reversal_note from suspense_classifications c
      join ledger_entries e on e.id = c.suspense_entry_id where e.ref_id = ${paid.id}`);
    expect(rows).toEqual([
      { reversed_by: 'stablebooks', reversal_note: 'rule 2: transfer matched intent ci_late' },
    ]);
    await expect(classify(paid.id, 'income_other')).rejects.toThrow(/no item in suspense matches/);
  });

  it('behavior: a payment return clears a classified arrival: the classification is reversed first', async () => {
    const arrival = await kit.transfer(STRANGER, MERCHANT, 11_000_000n);
    await kit.settle();
    const before = await snapshot();
    await classify(arrival.id, 'refund_due', 'to be sent back');
    await db.execute(sql`
      insert into checkout_intents (id, store_id, status, tracked_via, tx_hash, chain_id, amount_coins)
      values ('ci_sent_back', 'st_a', ${CheckoutStatus.SEND_BACK}, 'api', ${arrival.txHash}, ${31337}, '11')`);
    await kit.transfer(MERCHANT, STRANGER, 11_000_000n);
    await kit.settle();
    const after = await snapshot();
    expect(after.refunds).toBe(before.refunds);
    expect(after.suspense - before.suspense).toBe(11_000_000n);
    expect(after.wallet - before.wallet).toBe(-11_000_000n);
    expect(await kit.trialIsZero()).toBe(true);
    expect((await listSuspenseItems(db, { all: true })).some((i) => i.transferId === arrival.id)).toBe(false);
  });

  it('behavior: a reorg of a classified arrival reverses the classification with it', async () => {
    const arrival = await kit.transfer(STRANGER, CUSTODY, 5_000_000n);
    await kit.settle();
    const before = await snapshot();
    await classify(arrival.id, 'owner_contribution');
    await db.execute(sql`update chain_transfers set state = 'orphaned', orphaned_at = now()
      where tx_hash = ${arrival.txHash}`);
    expect(await kit.settle()).toMatchObject({ unwound: 1 });
    const after = await snapshot();
    expect(after.contributions).toBe(before.contributions);
    expect(after.suspense - before.suspense).toBe(5_000_000n);
    expect(after.custody - before.custody).toBe(-5_000_000n);
    expect(await kit.trialIsZero()).toBe(true);
  });
});

describe('the reconciliation report', () => {
  it('behavior: its suspense block shows unclassified and classified items apart, per token and per classification', async () => {
    const a = await kit.transfer(STRANGER, MERCHANT, 2_500_000n);
    const b = await kit.transfer(STRANGER, CUSTODY, 1_000_000n);
    await kit.settle();
    await classify(b.id, 'owner_contribution');
    const items = await listSuspenseItems(db, { all: true });
    expect(items.some((i) => i.transferId === a.id && i.classification === null)).toBe(true);
    const sum = (list: typeof items) => list.reduce((s, i) => s + i.amount, 0n);
    const report = await db.transaction((tx) =>
      buildReport(tx, {
        period: { from: new Date('2020-01-01T00:00:00Z'), to: new Date(Date.now() + 86_400_000) },
        storeId: 'st_a',
        chains: kit.registry,
        generatedAt: new Date(),
        checks: [],
        proofs: [],
        findingsFullList: null,
      }),
    );
    const unclassified = items.filter((i) => i.classification === null);
    expect(report.suspense.unclassified).toEqual([
      {
        storeId: 'st_a',
        chainId: 31337,
        symbol: 'USDT',
        token: USDT,
        count: unclassified.length,
        amount: formatDecimalAmount(sum(unclassified), 6),
      },
    ]);
    const byClass = new Map<string, typeof items>();
    for (const i of items)
      if (i.classification)
        byClass.set(i.classification.classification, [
          ...(byClass.get(i.classification.classification) ?? []),
          i,
        ]);
    expect(report.suspense.classified).toEqual(
      [...byClass.entries()]
        .sort(([x], [y]) => (x < y ? -1 : 1))
        .map(([classification, list]) => ({
          classification,
          storeId: 'st_a',
          chainId: 31337,
          symbol: 'USDT',
          token: USDT,
          count: list.length,
          amount: formatDecimalAmount(sum(list), 6),
        })),
    );
    // The unclassified items are what the suspense account still holds of rule 9's money.
    expect(-(await kit.balance('assets:suspense'))).toBe(sum(unclassified));
    expect(renderMarkdown(report)).toContain(
      `| st_a | 31337 | USDT | ${unclassified.length} | ${formatDecimalAmount(sum(unclassified), 6)} |`,
    );
  });
});
