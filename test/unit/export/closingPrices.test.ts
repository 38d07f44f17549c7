import { describe, expect, it } from 'vitest';
import { closingPrices, type ExportAccount, type ExportBooks } from '../../../src/export/exportModel.ts';
import { exportAssets } from '../../../src/export/naming.ts';
import { chooseRate } from '../../../src/valuation/chooseRate.ts';
import type { RateBook } from '../../../src/valuation/valueLedger.ts';

let nextId = 1n;
function acct(storeId: string, chainId: number, symbol: string): ExportAccount {
  const token = `0x${chainId.toString(16).padStart(40, '0')}`;
  return {
    id: nextId++,
    code: `assets:wallet:${storeId}:${chainId}:${symbol}`,
    type: 'asset',
    storeId,
    chainId,
    token,
    symbol,
    decimals: 6,
    asset: `${chainId}:${token}`,
    kindName: 'wallet',
  };
}

/** Rates by `store:day:symbol`; records every lookup, to show no intent is asked for. */
function rateBook(rates: Record<string, string>, asked: unknown[][]): RateBook {
  return (storeId, day, symbol, ...rest) => {
    asked.push([storeId, day, symbol, ...rest]);
    const text = rates[`${storeId}:${day}:${symbol}`];
    return text === undefined ? undefined : chooseRate({ par: text });
  };
}

function books(accounts: ExportAccount[], rateOn: RateBook, to: Date | null): ExportBooks {
  return {
    format: 'hledger',
    storeId: null,
    from: null,
    to,
    accounts,
    assets: exportAssets(accounts),
    startDate: '2026-11-01',
    valuation: { currency: 'EUR', minorUnit: 2, rateOn },
  };
}

describe('closingPrices', () => {
  const accounts = [
    acct('st_a', 1, 'USDT'),
    acct('st_b', 1, 'USDT'),
    acct('st_a', 8453, 'USDC'),
    acct('st_a', 56, 'USDT'),
  ];
  const rates = {
    'st_a:2026-11-30:USDT': '0.9300',
    'st_b:2026-11-30:USDT': '0.93',
    'st_a:2026-11-30:USDC': '1',
    'st_a:2026-12-01:USDC': '0.5',
  };

  it('behavior: the rate of the day before --to, per commodity, one price when every store of the commodity agrees; no intent is consulted', () => {
    const asked: unknown[][] = [];
    const closing = closingPrices(books(accounts, rateBook(rates, asked), new Date('2026-12-01T00:00:00Z')));
    expect(closing?.date).toBe('2026-11-30');
    expect(Object.fromEntries(closing?.prices.map((p) => [p.asset.commodity, p.rate]) ?? [])).toEqual({
      'USDT.1': '0.93',
      'USDC.8453': '1',
      'USDT.56': '0.93',
    });
    expect(asked.every((a) => a.length === 4 && a[3] === null && a[1] === '2026-11-30')).toBe(true);
  });

  it('behavior: stores whose rates differ, or a store without one, leave the commodity without a price (null), never a guess', () => {
    const differing = { ...rates, 'st_b:2026-11-30:USDT': '0.94' };
    const partial: Record<string, string> = { ...rates };
    delete partial['st_b:2026-11-30:USDT'];
    for (const r of [differing, partial]) {
      const closing = closingPrices(books(accounts, rateBook(r, []), new Date('2026-12-01T00:00:00Z')));
      expect(closing?.prices.find((p) => p.asset.commodity === 'USDT.1')?.rate).toBeNull();
    }
  });

  it('behavior: no closing day without --to, and none without --value', () => {
    expect(closingPrices(books(accounts, rateBook(rates, []), null))).toBeNull();
    expect(
      closingPrices({
        ...books(accounts, rateBook(rates, []), new Date('2026-12-01T00:00:00Z')),
        valuation: null,
      }),
    ).toBeNull();
  });
});
