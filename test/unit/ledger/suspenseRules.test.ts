import { describe, expect, it } from 'vitest';
import {
  classificationProblem,
  SUSPENSE_CLASSIFICATIONS,
  suspenseClassified,
  suspenseClassifiedKey,
} from '../../../src/ledger/rules/suspenseRules.ts';
import { USDT_BNB } from '../../helpers/tokens.ts';

/** Rule 10 as a pure function: what a classification books (docs/accounting.md, "Rule 10"). */
const fact = {
  storeId: 'st_a',
  suspenseEntryId: 42n,
  ref: { type: 'chain_transfer', id: '56:0xabc:0' },
  token: USDT_BNB,
  direction: 'in' as const,
  amount: 1_000_000_000_000_000_000_000n,
  classification: 'owner_contribution' as const,
  revision: 0,
  classifiedAt: new Date('2026-11-20T12:00:00Z'),
  classifiedBy: 'alice',
  note: 'initial funding',
};

describe('suspenseClassified', () => {
  it('behavior: money in: debit suspense, credit the classification’s account, same store and token', () => {
    const entry = suspenseClassified(fact);
    expect(entry.idempotencyKey).toBe('suspense:classified:42');
    expect(entry.kind).toBe('suspense.classified');
    expect(entry.memo).toBe('initial funding');
    expect(entry.lines.map((l) => [l.account.kind, l.amount])).toEqual([
      ['assets:suspense', 1_000_000_000_000_000_000_000n],
      ['equity:owner_contributions', -1_000_000_000_000_000_000_000n],
    ]);
    expect(entry.metadata).toEqual({
      classification: 'owner_contribution',
      suspense_entry_id: '42',
      classified_by: 'alice',
    });
    for (const [classification, kind] of [
      ['refund_due', 'liability:refunds_payable'],
      ['income_other', 'income:other'],
    ] as const) {
      expect(suspenseClassified({ ...fact, classification }).lines[1]?.account.kind).toBe(kind);
    }
  });

  it('behavior: money out: owner_withdrawal debits owner transfers and credits suspense; revisions get :r<n>', () => {
    const entry = suspenseClassified({
      ...fact,
      direction: 'out',
      classification: 'owner_withdrawal',
      revision: 2,
    });
    expect(entry.idempotencyKey).toBe('suspense:classified:42:r2');
    expect(entry.lines.map((l) => [l.account.kind, l.amount > 0n])).toEqual([
      ['equity:owner_transfers', true],
      ['assets:suspense', false],
    ]);
    expect(suspenseClassifiedKey(7n)).toBe('suspense:classified:7');
  });

  it('error: a classification of the other direction, a zero amount or a bad revision is refused', () => {
    expect(classificationProblem('owner_withdrawal', 'in')).toBe(
      'owner_withdrawal cannot explain money into a wallet; use owner_contribution, refund_due, income_other',
    );
    for (const c of SUSPENSE_CLASSIFICATIONS)
      expect(classificationProblem(c, c === 'owner_withdrawal' ? 'out' : 'in')).toBeNull();
    expect(() => suspenseClassified({ ...fact, classification: 'owner_withdrawal' })).toThrow(RangeError);
    expect(() => suspenseClassified({ ...fact, amount: 0n })).toThrow(/not positive/);
    expect(() => suspenseClassified({ ...fact, revision: -1 })).toThrow(/invalid revision/);
  });
});
