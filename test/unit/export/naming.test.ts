import { describe, expect, it } from 'vitest';
import { beancountWriter } from '../../../src/export/beancount.ts';
import { csvWriter } from '../../../src/export/csv.ts';
import { type ExportAccount, type ExportBooks, fixedDecimal } from '../../../src/export/exportModel.ts';
import { beancountAccountNames, exportAssets, plainAccountNames } from '../../../src/export/naming.ts';

const BEAN_ACCOUNT = /^(Assets|Liabilities|Equity|Income|Expenses)(:[A-Z0-9][A-Za-z0-9-]*)+$/;
const BEAN_COMMODITY = /^[A-Z][A-Z0-9'._-]{0,22}[A-Z0-9]$/;

let nextId = 1n;
function acct(code: string, type: ExportAccount['type'], storeId: string, chainId: number, decimals = 6) {
  const symbol = code.split(':').at(-1) ?? 'USDT';
  return {
    id: nextId++,
    code,
    type,
    storeId,
    chainId,
    token: `0x${chainId.toString(16).padStart(40, '0')}`,
    symbol,
    decimals,
    asset: `${chainId}:0x${chainId.toString(16).padStart(40, '0')}`,
    kindName: code.split(':')[1] ?? '',
  } satisfies ExportAccount;
}

function books(accounts: ExportAccount[]): ExportBooks {
  return {
    format: 'beancount',
    storeId: null,
    from: null,
    to: null,
    accounts,
    assets: exportAssets(accounts),
    startDate: '2026-11-01',
    valuation: null,
  };
}

describe('export naming', () => {
  it('behavior: beancount names match its grammar, also for store ids it cannot hold as they are', () => {
    const accounts = [
      acct('assets:in_transit:st_a:1:USDT', 'asset', 'st_a', 1),
      acct('liability:customer_overpayments:st_a:56:USDT', 'liability', 'st_a', 56, 18),
      acct('expense:service_fees:9 lives:1:USDT', 'expense', '9 lives', 1),
      acct('income:sales:_x.y:1:USDT', 'income', '_x.y', 1),
    ];
    const names = [...beancountAccountNames(accounts).values()];
    expect(names).toEqual([
      'Assets:InTransit:St-a:1:USDT',
      'Liabilities:CustomerOverpayments:St-a:56:USDT',
      'Expenses:ServiceFees:9-lives:1:USDT',
      'Income:Sales:X-x-y:1:USDT',
    ]);
    for (const n of names) expect(n).toMatch(BEAN_ACCOUNT);
    expect(plainAccountNames(accounts).get(accounts[2] as ExportAccount)).toBe(
      'Expenses:service_fees:9_lives:1:USDT',
    );
  });

  it('behavior: accounts whose names would merge in a tool stay apart', () => {
    const a = acct('assets:wallet:st_a:1:USDT', 'asset', 'st_a', 1);
    const b = acct('assets:wallet:st-a:1:USDT', 'asset', 'st-a', 1);
    const names = beancountAccountNames([a, b]);
    expect(names.get(a)).not.toBe(names.get(b));
    expect(names.get(a)).toMatch(BEAN_ACCOUNT);
    expect(names.get(b)).toMatch(BEAN_ACCOUNT);
  });

  it('behavior: one commodity per token and chain, valid for beancount', () => {
    const assets = exportAssets([
      acct('assets:wallet:st_a:1:USDT', 'asset', 'st_a', 1),
      acct('assets:wallet:st_a:11155111:USDT', 'asset', 'st_a', 11155111),
      acct('assets:wallet:st_a:56:USDT', 'asset', 'st_a', 56, 18),
    ]);
    expect(assets.map((a) => a.commodity)).toEqual(['USDT.1', 'USDT.56', 'USDT.11155111']);
    for (const a of assets) expect(a.commodity).toMatch(BEAN_COMMODITY);
  });

  it('behavior: amounts keep every decimal, far beyond 2^53 base units', () => {
    expect(fixedDecimal(1_500_000_000_000_000_001n, 18)).toBe('1.500000000000000001');
    expect(fixedDecimal(-9_900_000n, 6)).toBe('-9.900000');
    expect(fixedDecimal(5n, 0)).toBe('5');
    expect(fixedDecimal(123_456_789_012_345_678_901_234_567_890n, 18)).toBe(
      '123456789012.345678901234567890',
    );
  });

  it('behavior: beancount warns when sums could exceed its 28 significant digits', () => {
    const big = acct('assets:wallet:st_a:56:USDT', 'asset', 'st_a', 56, 18);
    const other = acct('income:sales:st_a:56:USDT', 'income', 'st_a', 56, 18);
    const writer = beancountWriter(books([big, other]));
    const entry = (amount: bigint) => ({
      id: 1n,
      kind: 'checkout.confirmed',
      occurredAt: new Date('2026-11-02T00:00:00Z'),
      storeId: 'st_a',
      refType: 'checkout_intent',
      refId: 'pi_1',
      reversesEntryId: null,
      memo: null,
      orderId: null,
      payoutId: null,
      payoutReference: null,
      txHashes: [],
      postings: [
        { account: big, amount },
        { account: other, amount: -amount },
      ],
    });
    writer.entry(entry(1_234_567_890_123_456_789_012_345_678n));
    expect(writer.warnings()).toEqual([]);
    writer.entry(entry(9_234_567_890_123_456_789_012_345_671n));
    expect(writer.warnings()[0]).toMatch(/28 significant digits.*assets:wallet:st_a:56:USDT/);
  });

  it('security: CSV text that a spreadsheet would run as a formula is quoted harmless', () => {
    const a = acct('assets:wallet:st_a:1:USDT', 'asset', 'st_a', 1);
    const b = acct('assets:suspense:st_a:1:USDT', 'asset', 'st_a', 1);
    const text = csvWriter(books([a, b])).entry({
      id: 7n,
      kind: 'chain.transfer_in_unmatched',
      occurredAt: new Date('2026-11-02T00:00:00Z'),
      storeId: 'st_a',
      refType: 'chain_transfer',
      refId: "=cmd|' /C calc'!A0",
      reversesEntryId: null,
      memo: null,
      orderId: null,
      payoutId: null,
      payoutReference: null,
      txHashes: [],
      postings: [
        { account: a, amount: 1n },
        { account: b, amount: -1n },
      ],
    });
    expect(text.split('\n')[0]).toBe(
      `2026-11-02,7,chain.transfer_in_unmatched chain_transfer =cmd|' /C calc'!A0,assets:wallet:st_a:1:USDT,0.000001,,USDT.1,'=cmd|' /C calc'!A0`,
    );
  });
});
