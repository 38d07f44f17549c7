import { describe, expect, it } from 'vitest';
import { checkoutWebhookPayloadSchema, isPaidWebhook } from '../../../../src/svc/models/checkoutWebhook.ts';

/** A full v6 callback for a fiat-priced intent paid in USDT on BNB chain. */
const fullWebhook = {
  all_svc_transaction_id: '665f20a19b1d4a0012ab3501',
  all_svc_checkout_intent_id: '665f1c2e9b1d4a0012ab34cd',
  webhook_id: 'wh_01HZX4Q2M8T9',
  amount_cents: 4999,
  currency: 1,
  currency_symbol: 'USD',
  amount_coins: '49.99',
  coin_contract_address: '0x55d398326f99059fF775485246999027B3197955',
  coin_symbol: 'USDT',
  chain_id: 56,
  tx_hash: '0x3f1e0b7e9d2c4a6b8f0e1d2c3b4a59687766554433221100ffeeddccbbaa0011',
  tx_from: '0x8894E0a0c962CB723c1976a4421c95949bE2D4E3',
  payment_method_type: 1,
  user_id: 'u_8812',
  order_id: 'ord_2024_00018',
  user_name: 'Ada',
  extra_obj: { cart: 'c_77', items: [1, 2] },
  status: 20,
  actual_paid_amount: '50.00',
};

const REQUIRED = [
  'all_svc_transaction_id',
  'all_svc_checkout_intent_id',
  'webhook_id',
  'amount_cents',
  'amount_coins',
  'coin_contract_address',
  'coin_symbol',
  'chain_id',
  'tx_hash',
  'tx_from',
  'payment_method_type',
] as const;
const OPTIONAL = [
  'currency',
  'currency_symbol',
  'user_id',
  'order_id',
  'user_name',
  'extra_obj',
  'status',
  'actual_paid_amount',
] as const;

function without(keys: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fullWebhook).filter(([k]) => !keys.includes(k)));
}

describe('checkout webhook payload', () => {
  it('behavior: full payload', () => {
    const payload = checkoutWebhookPayloadSchema.parse(fullWebhook);
    expect(payload.amount_cents).toBe(4999n);
    expect(payload.actual_paid_amount).toBe('50.00');
    expect(payload.extra_obj).toEqual({ cart: 'c_77', items: [1, 2] });
  });

  it('behavior: optional fields absent default to null', () => {
    const payload = checkoutWebhookPayloadSchema.parse(without(OPTIONAL));
    for (const key of OPTIONAL) expect(payload[key]).toBeNull();
  });

  it('behavior: stable-coin priced (stable-coin cents, currency null)', () => {
    const payload = checkoutWebhookPayloadSchema.parse({
      ...fullWebhook,
      currency: null,
      currency_symbol: null,
      amount_cents: 5000,
      amount_coins: '50',
    });
    expect(payload.currency).toBeNull();
    expect(payload.amount_cents).toBe(5000n);
  });

  it('behavior: an unknown status integer parses (it just is not paid)', () => {
    expect(checkoutWebhookPayloadSchema.parse({ ...fullWebhook, status: 30 }).status).toBe(30);
  });

  it.each(REQUIRED)('error: required %s missing', (key) => {
    expect(checkoutWebhookPayloadSchema.safeParse(without([key])).success).toBe(false);
  });

  it.each([
    ['amount_coins as JSON number', { amount_coins: 49.99 }],
    ['actual_paid_amount as JSON number', { actual_paid_amount: 50 }],
    ['negative amount_coins', { amount_coins: '-49.99' }],
    ['amount_cents beyond 2^53', { amount_cents: 2 ** 53 + 2 }],
    ['negative amount_cents', { amount_cents: -1 }],
    ['unknown currency', { currency: 0 }],
    ['unknown coin symbol', { coin_symbol: 'BUSD' }],
    ['status as string', { status: '20' }],
    ['extra_obj as array', { extra_obj: [1] }],
    ['extra_obj as string', { extra_obj: '{}' }],
    ['chain_id as string', { chain_id: '56' }],
    // Values PostgreSQL would refuse on every retry (a poison webhook): now a malformed body.
    ['actual_paid_amount of 131,073 digits', { actual_paid_amount: '1'.repeat(131_073) }],
    ['amount_coins of 79 digits', { amount_coins: '1'.repeat(79) }],
    ['currency above a PostgreSQL integer', { currency: 3_000_000_000 }],
    ['intent id over 200 characters', { all_svc_checkout_intent_id: 'a'.repeat(201) }],
  ])('error: %s', (_case, patch) => {
    expect(checkoutWebhookPayloadSchema.safeParse({ ...fullWebhook, ...patch }).success).toBe(false);
  });
});

describe('isPaidWebhook', () => {
  it('behavior: paid only at 20', () => {
    expect(isPaidWebhook({ status: 20 })).toBe(true);
    expect(isPaidWebhook({ status: 20 }, { historical: true })).toBe(true);
    for (const status of [-1, -3, 1, 10, 5, 21]) {
      expect(isPaidWebhook({ status })).toBe(false);
      expect(isPaidWebhook({ status }, { historical: true })).toBe(false);
    }
  });

  it('behavior: null is paid only for historical callbacks', () => {
    expect(isPaidWebhook({ status: null })).toBe(false);
    expect(isPaidWebhook({ status: null }, { historical: false })).toBe(false);
    expect(isPaidWebhook({ status: null }, { historical: true })).toBe(true);
  });

  it('behavior: an absent status parses to null, not paid', () => {
    expect(isPaidWebhook(checkoutWebhookPayloadSchema.parse(without(['status'])))).toBe(false);
  });
});
