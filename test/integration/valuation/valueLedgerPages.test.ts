import { describe, expect, it } from 'vitest';
import type { AccountKind, Token } from '../../../src/ledger/accounts.ts';
import { importRates } from '../../../src/rates/importRates.ts';
import { type LedgerValuation, valueLedger } from '../../../src/valuation/valueLedger.ts';
import { postOnDay } from '../../helpers/postOnDay.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_ETH } from '../../helpers/tokens.ts';

// valueLedger reads the postings in pages of whole entries: whatever the page size, no entry is
// split (a 3-posting entry's third line lost at a page's end), dropped or counted twice, and a
// page whose entries all come after `at` does not end the reading early. Hand figures below.
const { db } = await createMigratedDatabase('value_ledger_pages');
const S = 'st_p';
const AT = new Date('2026-12-01T00:00:00Z');

let n = 0;
function post(day: string, token: Token, lines: [AccountKind, bigint][]) {
  n++;
  return postOnDay(db, { key: `pages-${n}`, day, storeId: S, token, lines });
}

const valued = (pageSize?: number) =>
  valueLedger(db, { currency: 'EUR', at: AT, ...(pageSize === undefined ? {} : { pageSize }) });

describe('valueLedger pages', () => {
  it('behavior: every page size gives the hand figures: no entry split, dropped or doubled; a page of entries after `at` does not stop the reading', async () => {
    await importRates(db, [
      { line: 2, date: '2026-11-02', asset: 'USDT', currency: 'EUR', rate: '0.9234' },
      { line: 3, date: '2026-11-03', asset: 'USDT', currency: 'EUR', rate: '0.95' },
      { line: 4, date: '2026-11-30', asset: 'USDT', currency: 'EUR', rate: '0.93' },
    ]);
    // In id order. Entries 1, 3 and 4 happen after `at`: with pages of 1 or 2 some pages hold
    // none of the valued postings (3 and 4 are one page of 2).
    await post('2026-12-05', USDT_ETH, [
      ['assets:wallet', 1_000_000n],
      ['assets:in_transit', -1_000_000n],
    ]);
    // 24.70 x 0.9234 = 22.80798 -> 22.81; 0.30 -> 0.27702 -> 0.28; -25 -> -23.085 -> -23.08 (half
    // to even): the values sum to 0.01, so the rounding line is -0.01.
    await post('2026-11-02', USDT_ETH, [
      ['assets:in_transit', 24_700_000n],
      ['expense:service_fees', 300_000n],
      ['income:sales', -25_000_000n],
    ]);
    await post('2026-12-06', USDT_ETH, [
      ['assets:in_transit', 7_000_000n],
      ['expense:service_fees', 1_000_000n],
      ['income:sales', -8_000_000n],
    ]);
    await post('2026-12-07', USDT_ETH, [
      ['assets:wallet', 2_000_000n],
      ['assets:in_transit', -2_000_000n],
    ]);
    // 10 x 0.95 = 9.50 each way.
    await post('2026-11-03', USDT_ETH, [
      ['assets:wallet', 10_000_000n],
      ['assets:in_transit', -10_000_000n],
    ]);
    // 1.000001 x 0.95 = 0.95000095 -> 0.95 twice; -2.000002 x 0.95 -> -1.90: no rounding line.
    await post('2026-11-03', USDT_ETH, [
      ['assets:in_transit', 1_000_001n],
      ['expense:service_fees', 1_000_001n],
      ['income:sales', -2_000_002n],
    ]);
    // No USDC rate: unvalued, a missing rate.
    await post('2026-11-02', USDC_BASE, [
      ['assets:wallet', 5_000_000n],
      ['assets:suspense', -5_000_000n],
    ]);

    const whole = await valued(1000);
    const figures = (v: LedgerValuation) =>
      Object.fromEntries(
        v.accounts.map((a) => [
          a.code,
          [a.balance, a.unvalued > 0 ? `unvalued ${a.unvalued}` : a.value, a.closingValue, a.unrealised],
        ]),
      );
    expect(figures(whole)).toEqual({
      // 24.70 - 10 + 1.000001 = 15.700001 USDT; cost 22.81 - 9.50 + 0.95 = 14.26; at 0.93: 14.60.
      'assets:in_transit:st_p:1:USDT': [15_700_001n, 1426n, 1460n, 34n],
      'assets:wallet:st_p:1:USDT': [10_000_000n, 950n, 930n, -20n],
      'expense:service_fees:st_p:1:USDT': [1_300_001n, 123n, null, null],
      'income:sales:st_p:1:USDT': [-27_000_002n, -2498n, null, null],
      'assets:wallet:st_p:8453:USDC': [5_000_000n, 'unvalued 1', null, null],
      'assets:suspense:st_p:8453:USDC': [-5_000_000n, 'unvalued 1', null, null],
    });
    expect(whole.rounding).toEqual(new Map([[S, -1n]]));
    expect(whole.missing).toEqual([{ storeId: S, date: '2026-11-02', symbol: 'USDC' }]);

    for (const pageSize of [1, 2, 3, 4, 6, 7, undefined]) expect(await valued(pageSize)).toEqual(whole);
  });
});
