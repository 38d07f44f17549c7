/**
 * Chart of accounts (docs/accounting.md). Accounts exist per store, chain and token, and are
 * created on first use. A code reads like `assets:wallet:<store>:<chain>:<token symbol>`.
 *
 * Glossary
 * - account kind: the row of the chart, e.g. `assets:wallet`;
 * - account: a kind for one (store, chain, token), e.g. `assets:wallet:st_a:8453:USDC`;
 * - asset: what an amount is counted in, `<eip155 chain id>:<token contract, lowercase>`.
 */
export const ACCOUNT_KINDS = {
  /** Payments the service reports confirmed, not yet proven final on chain. */
  'assets:in_transit': 'asset',
  /** The merchant wallet at the service (tx_to); equals its on-chain balance. */
  'assets:wallet': 'asset',
  /** The business custodial wallet that funds claim links; equals its on-chain balance. */
  'assets:custody': 'asset',
  /** Funded, unclaimed claim links. */
  'assets:claim_pool': 'asset',
  /** Cancelled or expired claim links whose refund has not arrived. */
  'assets:refund_receivable': 'asset',
  /** Transfers into a watched wallet that match nothing (yet). */
  'assets:suspense': 'asset',
  /** Requested amount (amount_coins) of confirmed intents. */
  'income:sales': 'income',
  /** Confirmed with actual_paid_amount below the requested amount. */
  'expense:sales_shortfall': 'expense',
  /** Paid above the requested amount. */
  'liability:customer_overpayments': 'liability',
  /** service_fee_amount of each confirmed payment. */
  'expense:service_fees': 'expense',
  /** Fees settled when funding a claim link (and not refunded). */
  'expense:payout_fees': 'expense',
  /** Claim links that their recipients claimed. */
  'expense:payouts': 'expense',
  /** Wallet movements the merchant made itself (withdrawals; a person's owner_withdrawal). */
  'equity:owner_transfers': 'equity',
  /** Suspense a person classified as the owner's own money put in (owner_contribution). */
  'equity:owner_contributions': 'equity',
  /** Suspense a person classified as money to pay back to whoever sent it (refund_due). */
  'liability:refunds_payable': 'liability',
  /** Suspense a person classified as income other than sales (income_other). */
  'income:other': 'income',
} as const;

export type AccountKind = keyof typeof ACCOUNT_KINDS;
export type AccountType = (typeof ACCOUNT_KINDS)[AccountKind];

/** A token as the ledger needs it: where it lives, what people call it, and its decimals. */
export interface Token {
  chainId: number;
  /** ERC-20 contract address; stored lowercase. */
  address: `0x${string}`;
  symbol: string;
  decimals: number;
}

/** One account: a kind of the chart for one store and one token. */
export interface AccountRef {
  kind: AccountKind;
  storeId: string;
  token: Token;
}

export function accountType(kind: AccountKind): AccountType {
  return ACCOUNT_KINDS[kind];
}

export function assetOf(token: Token): string {
  return `${token.chainId}:${token.address.toLowerCase()}`;
}

export function accountCode(ref: AccountRef): string {
  return `${ref.kind}:${ref.storeId}:${ref.token.chainId}:${ref.token.symbol}`;
}

export function account(kind: AccountKind, storeId: string, token: Token): AccountRef {
  return { kind, storeId, token };
}
