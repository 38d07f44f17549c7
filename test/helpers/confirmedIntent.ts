import type { CheckoutIntent } from '../../src/svc/models/checkoutIntent.ts';

/** Base's USDC contract, the token of confirmedIntent's payments. */
export const BASE_USDC = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
/** The merchant wallet confirmedIntent's payments are sent to (tx_to). */
export const TEST_MERCHANT = `0x${'ab'.repeat(20)}` as const;

/**
 * The service's answer for intent `id`: CONFIRMED, 25 USDC on Base paid to TEST_MERCHANT, a fee
 * of 0.25 (net 24.75), through a temporary wallet (tx_hash, then tx_hash_2). `patch` changes any
 * field.
 */
export function confirmedIntent(id: string, patch: Partial<CheckoutIntent> = {}): CheckoutIntent {
  return {
    all_svc_checkout_intent_id: id,
    currency: 1,
    currency_symbol: 'USD',
    amount_cents: 2500n,
    chain_id: 8453,
    amount_coins: '25',
    coin_symbol: 'USDC',
    coin_contract: BASE_USDC,
    currency_rate: '1',
    status: 20,
    order_id: `order-${id}`,
    order_description: null,
    user_id: null,
    user_name: null,
    error_message: null,
    tx_hash: `0x${'1'.repeat(64)}`,
    tx_hash_2: `0x${'2'.repeat(64)}`,
    tx_from: `0x${'cd'.repeat(20)}`,
    tx_to: TEST_MERCHANT,
    actual_paid_amount: '25',
    service_fee_amount: '0.25',
    net_income_amount: '24.75',
    payment_method_type: 1,
    accepted_stable_coins: 2,
    ...patch,
  } as CheckoutIntent;
}
