import { describe, expect, it } from 'vitest';
import { divideRoundHalfEven, parseExactRate } from '../../../src/money/exactRate.ts';
import { formatFiat } from '../../../src/money/formatFiat.ts';
import { chooseRate } from '../../../src/valuation/chooseRate.ts';
import { isHoldingAccount, revalueHolding } from '../../../src/valuation/revalueHolding.ts';
import { type PostingToValue, valueEntry, valuePosting } from '../../../src/valuation/valueEntry.ts';

const line = (accountCode: string, symbol: string, decimals: number, amount: bigint): PostingToValue => ({
  accountCode,
  symbol,
  decimals,
  amount,
});

describe('exact rates', () => {
  it('behavior: a rate is read exactly and canonically; floats, signs, exponents and zero are refused', () => {
    expect(parseExactRate('0.92340')).toEqual({ text: '0.9234', numerator: 9234n, denominator: 10000n });
    expect(parseExactRate('001.50')?.text).toBe('1.5');
    for (const bad of ['0', '0.000', '-1', '1e2', ' 1', '1.', '.5', 'abc', ''])
      expect(parseExactRate(bad), bad).toBeUndefined();
  });

  it('behavior: half to even: ties go to the even neighbour in both signs, other fractions to the nearest', () => {
    expect([5n, 15n, 25n, -5n, -15n, -25n].map((n) => divideRoundHalfEven(n, 10n))).toEqual([
      0n,
      2n,
      2n,
      0n,
      -2n,
      -2n,
    ]);
    expect([14n, 16n, -14n, -16n].map((n) => divideRoundHalfEven(n, 10n))).toEqual([1n, 2n, -1n, -2n]);
  });
});

describe('formatFiat', () => {
  it('behavior: keeps the minor digits of the currency, in both signs', () => {
    expect([
      formatFiat(3330n, 2),
      formatFiat(-1n, 2),
      formatFiat(0n, 2),
      formatFiat(1200n, 0),
      formatFiat(1n, 3),
    ]).toEqual(['33.30', '-0.01', '0.00', '1200', '0.001']);
  });
});

describe('valueEntry', () => {
  it('behavior: the rate is fiat per coin: 10 USDT at 0.92 EUR is 9.20 EUR, not 10.87', () => {
    const rate = chooseRate({ imported: '0.92' });
    expect(rate && valuePosting(10_000_000n, 6, rate, 2)).toBe(920n);
  });

  it('behavior: the decimals of each token count: 1 USDC of 18 decimals and of 6 are both 0.92', () => {
    const rate = chooseRate({ imported: '0.92' });
    expect(rate && valuePosting(10n ** 18n, 18, rate, 2)).toBe(92n);
    expect(rate && valuePosting(10n ** 6n, 6, rate, 2)).toBe(92n);
    expect(rate && valuePosting(10n ** 6n, 6, rate, 0)).toBe(1n);
  });

  it('behavior: every fully valued entry nets to zero in fiat with its rounding line, whatever the amounts', () => {
    const rate = chooseRate({ imported: '0.923456789' });
    for (let i = 1n; i < 400n; i++) {
      const fee = (i * 7919n) % 1_000_003n;
      const requested = i * 12_345_679n + fee;
      const valued = valueEntry(
        [
          line('assets:in_transit:s:1:USDT', 'USDT', 6, requested - fee),
          line('expense:service_fees:s:1:USDT', 'USDT', 6, fee),
          line('income:sales:s:1:USDT', 'USDT', 6, -requested),
        ],
        () => rate,
        2,
      );
      const sum = valued.postings.reduce((s, p) => s + (p.value ?? 0n), 0n);
      expect(sum + (valued.rounding ?? 99n)).toBe(0n);
      expect(
        valued.rounding === null ? 99n : valued.rounding < 0n ? -valued.rounding : valued.rounding,
      ).toBeLessThanOrEqual(1n);
    }
  });

  it('behavior: a posting without a rate is unvalued (null, not zero), named missing, and the entry has no rounding line', () => {
    const eur = chooseRate({ imported: '0.92' });
    const valued = valueEntry(
      [
        line('assets:wallet:s:1:USDC', 'USDC', 6, 5_000_000n),
        line('assets:wallet:s:1:USDT', 'USDT', 6, -5_000_000n),
      ],
      (symbol) => (symbol === 'USDT' ? eur : undefined),
      2,
    );
    expect(valued.postings.map((p) => p.value)).toEqual([null, -460n]);
    expect(valued.missing).toEqual(['USDC']);
    expect(valued.rounding).toBeNull();
  });

  it('behavior: the intent rate wins over an imported one, which wins over par; no candidate means no rate', () => {
    expect(chooseRate({ intent: '0.91', imported: '0.92', par: '1' })).toMatchObject({ source: 'intent' });
    expect(chooseRate({ intent: null, imported: '0.92', par: '1' })).toMatchObject({ source: 'import' });
    expect(chooseRate({ par: '1' })).toMatchObject({ source: 'par' });
    expect(chooseRate({})).toBeUndefined();
  });
});

describe('revalueHolding', () => {
  it('behavior: a loss is negative, and no closing rate means no revaluation (not a zero gain)', () => {
    expect(
      revalueHolding(
        { balance: 100_000_000n, decimals: 6, valuedCost: 9200n },
        chooseRate({ imported: '0.9' }),
        2,
      ),
    ).toEqual({
      closingValue: 9000n,
      unrealised: -200n,
    });
    expect(revalueHolding({ balance: 1n, decimals: 6, valuedCost: 0n }, undefined, 2)).toBeUndefined();
  });

  it('behavior: wallets, custody, pools, receivables, suspense and in transit are holdings; income and expense are not', () => {
    expect(
      [
        'assets:wallet:s:1:USDT',
        'assets:claim_pool:s:1:USDT',
        'assets:suspense:s:1:USDC',
        'income:sales:s:1:USDT',
        'expense:payouts:s:1:USDT',
      ].map(isHoldingAccount),
    ).toEqual([true, true, true, false, false]);
  });
});
