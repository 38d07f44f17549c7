import { describe, expect, it } from 'vitest';
import { accountCode } from '../../../src/ledger/accounts.ts';
import {
  adjustmentMoved,
  type CorrectionFact,
  correctionSource,
  correctionTargetProblem,
} from '../../../src/ledger/rules/correctionRules.ts';

const USDT = { chainId: 1, address: `0x${'a1'.repeat(20)}` as const, symbol: 'USDT', decimals: 6 };

function fact(patch: Partial<CorrectionFact> = {}): CorrectionFact {
  return {
    correctionId: 7n,
    storeId: 'st_a',
    ref: { type: 'checkout_intent', id: 'ci_1' },
    token: USDT,
    from: 'assets:in_transit',
    to: 'expense:sales_shortfall',
    leftover: 5_000_000n,
    amount: 2_000_000n,
    findingId: 3n,
    findingKind: 'payment_amount_mismatch',
    note: 'agreed discount',
    madeBy: 'alice',
    madeAt: new Date('2026-11-03T10:00:00Z'),
    ...patch,
  };
}

const lines = (f: CorrectionFact) => adjustmentMoved(f).lines.map((l) => [accountCode(l.account), l.amount]);

describe('correction rules', () => {
  it('behavior: the source per finding: rule 2 excess and rule 4 in suspense, the rest in in_transit', () => {
    expect(correctionSource('payment_amount_mismatch', { left_in_transit: '5' })).toBe('assets:in_transit');
    expect(correctionSource('payment_amount_mismatch', { to_suspense: '1' })).toBe('assets:suspense');
    expect(correctionSource('proven_then_failed', {})).toBe('assets:suspense');
    expect(correctionSource('confirmed_amounts_changed', {})).toBe('assets:in_transit');
  });

  it('behavior: a debit leftover is explained by a debit of the target, a credit leftover credits it', () => {
    expect(lines(fact())).toEqual([
      ['expense:sales_shortfall:st_a:1:USDT', 2_000_000n],
      ['assets:in_transit:st_a:1:USDT', -2_000_000n],
    ]);
    expect(
      lines(fact({ from: 'assets:suspense', to: 'income:other', leftover: -5_000_000n, amount: 5_000_000n })),
    ).toEqual([
      ['assets:suspense:st_a:1:USDT', 5_000_000n],
      ['income:other:st_a:1:USDT', -5_000_000n],
    ]);
    const entry = adjustmentMoved(fact());
    expect(entry).toMatchObject({
      idempotencyKey: 'correction:7',
      kind: 'adjustment.moved',
      memo: 'agreed discount',
      metadata: { made_by: 'alice', why: 'agreed discount', finding_id: '3', correction_id: '7' },
    });
  });

  it('error: a target that does not fit the sign, or an amount beyond the leftover, is refused', () => {
    expect(correctionTargetProblem('income:other', 5n)).toMatch(/cannot take money the books expected/);
    expect(correctionTargetProblem('expense:sales_shortfall', -5n)).toMatch(
      /use liability:customer_overpayments/,
    );
    expect(correctionTargetProblem('assets:wallet', -5n)).not.toBeNull();
    expect(() => adjustmentMoved(fact({ amount: 5_000_001n }))).toThrow(/not in 1\.\.5000000/);
    expect(() => adjustmentMoved(fact({ amount: 0n }))).toThrow(RangeError);
    expect(() => adjustmentMoved(fact({ to: 'income:other' }))).toThrow(RangeError);
  });
});
