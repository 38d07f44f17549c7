import { describe, expect, it } from 'vitest';
import { account } from '../../../src/ledger/accounts.ts';
import { isBalanced, sumByAsset, unbalancedAssets } from '../../../src/ledger/rules/balanceCheck.ts';
import { credit, debit, draftEntry } from '../../../src/ledger/rules/postingLines.ts';
import { USDC_BASE, USDT_BNB } from '../../helpers/tokens.ts';
import { STORE, T0 } from './ledgerFixtures.ts';

const wallet6 = account('assets:wallet', STORE, USDC_BASE);
const sales6 = account('income:sales', STORE, USDC_BASE);
const wallet18 = account('assets:wallet', STORE, USDT_BNB);
const sales18 = account('income:sales', STORE, USDT_BNB);
const head = {
  idempotencyKey: 'k',
  kind: 'test.entry',
  occurredAt: T0,
  storeId: STORE,
  ref: { type: 't', id: '1' },
};

describe('sumByAsset', () => {
  it('behavior: sums per asset, keyed <chain id>:<contract>', () => {
    const sums = sumByAsset([debit(wallet6, 5n), credit(sales6, 3n), debit(wallet18, 10n ** 18n)]);
    expect(sums).toEqual(
      new Map([
        ['8453:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', 2n],
        ['56:0x55d398326f99059ff775485246999027b3197955', 10n ** 18n],
      ]),
    );
  });

  it('behavior: a balanced asset is present with 0n; no lines give an empty map', () => {
    expect(sumByAsset([debit(wallet6, 5n), credit(sales6, 5n)])).toEqual(
      new Map([['8453:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', 0n]]),
    );
    expect(sumByAsset([])).toEqual(new Map());
  });

  it('behavior: one asset balancing cannot hide another one off', () => {
    const lines = [debit(wallet6, 5n), credit(sales18, 5n)];
    expect(isBalanced(lines)).toBe(false);
    expect(unbalancedAssets(lines).size).toBe(2);
    expect(
      isBalanced([debit(wallet6, 5n), credit(sales6, 5n), debit(wallet18, 1n), credit(sales18, 1n)]),
    ).toBe(true);
  });
});

describe('draftEntry', () => {
  it('behavior: drops zero lines', () => {
    const entry = draftEntry(head, [
      debit(wallet6, 5n),
      debit(wallet18, 0n),
      credit(sales6, 5n),
      credit(sales18, 0n),
    ]);
    expect(entry!.lines).toEqual([
      { account: wallet6, amount: 5n },
      { account: sales6, amount: -5n },
    ]);
  });

  it('behavior: fewer than two moving lines is no entry', () => {
    expect(draftEntry(head, [debit(wallet6, 0n), credit(sales6, 0n)])).toBeNull();
    expect(draftEntry(head, [])).toBeNull();
  });

  it('error: an unbalanced draft throws', () => {
    expect(() => draftEntry(head, [debit(wallet6, 5n), credit(sales6, 4n)])).toThrow(/unbalanced.*off by 1/);
  });

  it('error: another store account throws', () => {
    expect(() =>
      draftEntry(head, [debit(wallet6, 5n), credit(account('income:sales', 'st_b', USDC_BASE), 5n)]),
    ).toThrow(/store st_b/);
  });

  it('error: negative debit or credit throws', () => {
    expect(() => debit(wallet6, -1n)).toThrow(RangeError);
    expect(() => credit(wallet6, -1n)).toThrow(RangeError);
  });
});
