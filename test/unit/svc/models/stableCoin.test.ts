import { describe, expect, it } from 'vitest';
import {
  coinsToFlags,
  flagsInclude,
  flagsToCoins,
  StableCoin,
  StableCoinFlag,
  stableCoinFlagsSchema,
  stableCoinFromSymbol,
  stableCoinSchema,
  stableCoinSymbol,
  stableCoinSymbolSchema,
} from '../../../../src/svc/models/stableCoin.ts';

describe('StableCoin', () => {
  it('behavior: 1 USDT, 2 USDC', () => {
    expect(stableCoinSchema.parse(1)).toBe(StableCoin.USDT);
    expect(stableCoinSchema.parse(2)).toBe(StableCoin.USDC);
  });

  it.each([0, 3, -1, 1.5, 'USDT', '1', null])('error: rejects %j', (v) => {
    const result = stableCoinSchema.safeParse(v);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(/1 \(USDT\) or 2 \(USDC\)/);
  });

  it('behavior: symbol <-> value', () => {
    expect(stableCoinSymbol(1)).toBe('USDT');
    expect(stableCoinSymbol(2)).toBe('USDC');
    expect(stableCoinFromSymbol('USDT')).toBe(1);
    expect(stableCoinFromSymbol('USDC')).toBe(2);
  });

  it.each(['usdt', 'DAI', '', 'toString', '__proto__'])('error: unknown symbol %j', (s) => {
    expect(() => stableCoinFromSymbol(s)).toThrow(/unknown stable coin symbol/);
  });

  it('behavior: coin_symbol schema', () => {
    expect(stableCoinSymbolSchema.parse('USDC')).toBe('USDC');
    expect(stableCoinSymbolSchema.safeParse('usdc').success).toBe(false);
    expect(stableCoinSymbolSchema.safeParse('DAI').success).toBe(false);
  });
});

describe('StableCoinFlag bitmask', () => {
  it('behavior: bit n is coin n + 1', () => {
    expect(coinsToFlags([StableCoin.USDT])).toBe(1);
    expect(coinsToFlags([StableCoin.USDC])).toBe(2);
    expect(coinsToFlags([StableCoin.USDT, StableCoin.USDC])).toBe(3);
    expect(coinsToFlags([StableCoin.USDC, StableCoin.USDT, StableCoin.USDC])).toBe(3);
  });

  it('behavior: flags to coins, in coin order', () => {
    expect(flagsToCoins(StableCoinFlag.USDT)).toEqual([1]);
    expect(flagsToCoins(StableCoinFlag.USDC)).toEqual([2]);
    expect(flagsToCoins(StableCoinFlag.ANY)).toEqual([1, 2]);
  });

  it('behavior: flagsInclude', () => {
    expect(flagsInclude(1, StableCoin.USDT)).toBe(true);
    expect(flagsInclude(1, StableCoin.USDC)).toBe(false);
    expect(flagsInclude(2, StableCoin.USDT)).toBe(false);
    expect(flagsInclude(2, StableCoin.USDC)).toBe(true);
    expect(flagsInclude(3, StableCoin.USDT)).toBe(true);
    expect(flagsInclude(3, StableCoin.USDC)).toBe(true);
  });

  it('behavior: round-trip', () => {
    for (const flags of [1, 2, 3] as const) expect(coinsToFlags(flagsToCoins(flags))).toBe(flags);
  });

  it('error: no coins', () => {
    expect(() => coinsToFlags([])).toThrow(/at least one stable coin/);
  });

  it('behavior: schema accepts 1, 2, 3 only', () => {
    expect([1, 2, 3].map((f) => stableCoinFlagsSchema.parse(f))).toEqual([1, 2, 3]);
    for (const bad of [0, 4, 7, -1, '3']) expect(stableCoinFlagsSchema.safeParse(bad).success).toBe(false);
  });
});
