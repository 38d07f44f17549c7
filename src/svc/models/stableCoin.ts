/**
 * StableCoin: the coin an amount is in (1 USDT, 2 USDC). StableCoinFlag: a bitmask of coins a payer
 * may use, where bit n stands for coin n + 1. Other coin values are reserved and the service
 * rejects them, so we do too.
 */
import { z } from 'zod';

export const StableCoin = { USDT: 1, USDC: 2 } as const;
export type StableCoin = (typeof StableCoin)[keyof typeof StableCoin];
export type StableCoinSymbol = keyof typeof StableCoin;

export const stableCoinSchema = z.enum(StableCoin, {
  error: 'must be a StableCoin integer: 1 (USDT) or 2 (USDC)',
});

/** coin_symbol as the service writes it. */
export const stableCoinSymbolSchema = z.enum(['USDT', 'USDC'], { error: 'must be "USDT" or "USDC"' });

export function stableCoinSymbol(coin: StableCoin): StableCoinSymbol {
  return coin === StableCoin.USDT ? 'USDT' : 'USDC';
}

export function stableCoinFromSymbol(symbol: string): StableCoin {
  const coin = Object.hasOwn(StableCoin, symbol) ? StableCoin[symbol as StableCoinSymbol] : undefined;
  if (coin === undefined)
    throw new RangeError(`unknown stable coin symbol ${JSON.stringify(symbol)}; use USDT or USDC`);
  return coin;
}

export const StableCoinFlag = { USDT: 1, USDC: 2, ANY: 3 } as const;
export type StableCoinFlags = (typeof StableCoinFlag)[keyof typeof StableCoinFlag];

/** A bitmask naming at least one known coin; unknown bits would name a coin we cannot book. */
export const stableCoinFlagsSchema = z.enum(StableCoinFlag, {
  error: 'must be a StableCoinFlag bitmask: 1 (USDT), 2 (USDC) or 3 (either)',
});

const ALL_COINS: readonly StableCoin[] = [StableCoin.USDT, StableCoin.USDC];

function bit(coin: StableCoin): number {
  return 1 << (coin - 1);
}

export function coinsToFlags(coins: readonly StableCoin[]): StableCoinFlags {
  let flags = 0;
  for (const coin of coins) flags |= bit(coin);
  if (flags === 0) throw new RangeError('coinsToFlags: at least one stable coin is required');
  return flags as StableCoinFlags;
}

/** Coins named by the bitmask, in StableCoin order. */
export function flagsToCoins(flags: StableCoinFlags): StableCoin[] {
  return ALL_COINS.filter((coin) => flagsInclude(flags, coin));
}

export function flagsInclude(flags: StableCoinFlags, coin: StableCoin): boolean {
  return (flags & bit(coin)) !== 0;
}
