import { describe, expect, it } from 'vitest';
import { currencyMinorUnit } from '../../../src/money/currencyMinorUnits.ts';
import { chooseRate } from '../../../src/valuation/chooseRate.ts';
import { revalueHolding } from '../../../src/valuation/revalueHolding.ts';
import { valueEntry } from '../../../src/valuation/valueEntry.ts';

// The figures of docs/accounting.md, "Valuation", worked by hand there.
const usdt = (units: bigint) => units; // 6 decimals: 1 USDT = 1_000_000n

describe('the worked example of docs/accounting.md, "Valuation"', () => {
  const rate = chooseRate({ imported: '0.9234' });
  const cents = currencyMinorUnit('EUR');

  it('behavior: R = 25 USDT, F = 0.30 at 0.9234 gives 22.81, 0.28, -23.08 and a rounding line of -0.01', () => {
    const valued = valueEntry(
      [
        {
          accountCode: 'assets:in_transit:st_a:1:USDT',
          symbol: 'USDT',
          decimals: 6,
          amount: usdt(24_700_000n),
        },
        {
          accountCode: 'expense:service_fees:st_a:1:USDT',
          symbol: 'USDT',
          decimals: 6,
          amount: usdt(300_000n),
        },
        { accountCode: 'income:sales:st_a:1:USDT', symbol: 'USDT', decimals: 6, amount: usdt(-25_000_000n) },
      ],
      () => rate,
      cents,
    );
    expect(valued.postings.map((p) => p.value)).toEqual([2281n, 28n, -2308n]);
    expect(valued.rounding).toBe(-1n);
    expect(valued.postings.reduce((sum, p) => sum + (p.value ?? 0n), 0n) + (valued.rounding ?? 0n)).toBe(0n);
    expect(valued.missing).toEqual([]);
  });

  it('behavior: 24.70 USDT held at a closing rate of 0.93 is 22.97 EUR, an unrealised gain of 0.16 on a cost of 22.81', () => {
    const revalued = revalueHolding(
      { balance: 24_700_000n, decimals: 6, valuedCost: 2281n },
      chooseRate({ imported: '0.93' }),
      cents,
    );
    expect(revalued).toEqual({ closingValue: 2297n, unrealised: 16n });
  });
});
