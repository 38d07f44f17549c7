import type { Token } from '../../src/ledger/accounts.ts';

/** Real mainnet contracts, for tests that need a 6- and an 18-decimal token. */
export const USDC_BASE: Token = {
  chainId: 8453,
  address: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  symbol: 'USDC',
  decimals: 6,
};
export const USDT_BNB: Token = {
  chainId: 56,
  address: '0x55d398326f99059ff775485246999027b3197955',
  symbol: 'USDT',
  decimals: 18,
};
export const USDT_ETH: Token = {
  chainId: 1,
  address: '0xdac17f958d2ee523a2206206994597c13d831ec7',
  symbol: 'USDT',
  decimals: 6,
};
