import { describe, expect, it } from 'vitest';
import {
  checkoutIntentSchema,
  checkoutIntentStatusPayloadSchema,
  createCheckoutIntentRequestSchema,
  createCheckoutIntentResultSchema,
} from '../../../../src/svc/models/checkoutIntent.ts';
import { envelopeSchema } from '../../../../src/svc/models/envelope.ts';

const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const MERCHANT_WALLET = '0x4E9ce36E442e55EcD9025B9a6E0D88485d628A67';
const BUYER_WALLET = '0x1dB3439a222C519ab44bb1144fC28167b4Fa6EE6';
const TX_1 = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';
const TX_2 = '0xa7c3f9b1e2d4c6a8b0e1f2d3c4b5a6978877665544332211ffeeddccbbaa9988';

/** A fiat-priced intent confirmed on Base, shaped like the spec's success example (no error_message, tx_hash_2). */
const confirmedFiatIntent = {
  all_svc_checkout_intent_id: '665f1c2e9b1d4a0012ab34cd',
  currency: 44,
  currency_symbol: 'EUR',
  amount_cents: 2599,
  chain_id: 8453,
  amount_coins: '28.12',
  coin_symbol: 'USDC',
  coin_contract: USDC_BASE,
  currency_rate: '1.0819',
  status: 20,
  order_id: 'ord_2024_00017',
  order_description: 'Annual plan',
  user_id: 'u_8812',
  user_name: 'Ada',
  tx_hash: TX_1,
  tx_from: BUYER_WALLET,
  tx_to: MERCHANT_WALLET,
  actual_paid_amount: '28.12',
  service_fee_amount: '0.28',
  net_income_amount: '27.84',
  payment_method_type: 2,
  accepted_stable_coins: 3,
};

/** A stable-coin-priced intent just created: nothing paid yet. */
const createdCoinIntent = {
  all_svc_checkout_intent_id: '665f1c2e9b1d4a0012ab34ce',
  currency: null,
  currency_symbol: null,
  amount_cents: null,
  chain_id: null,
  amount_coins: '15',
  coin_symbol: 'USDT',
  coin_contract: null,
  currency_rate: null,
  status: 1,
  order_id: null,
  order_description: null,
  user_id: null,
  user_name: null,
  error_message: null,
  tx_hash: null,
  tx_hash_2: null,
  tx_from: null,
  tx_to: MERCHANT_WALLET,
  actual_paid_amount: null,
  service_fee_amount: null,
  net_income_amount: null,
  payment_method_type: 0,
  accepted_stable_coins: null,
};

describe('checkout intent', () => {
  it('behavior: confirmed fiat intent; absent error_message and tx_hash_2 read as null', () => {
    const intent = checkoutIntentSchema.parse(confirmedFiatIntent);
    expect(intent.error_message).toBeNull();
    expect(intent.tx_hash_2).toBeNull();
    expect(intent.amount_cents).toBe(2599n);
    expect(intent.amount_coins).toBe('28.12');
    expect(intent.coin_contract).toBe(USDC_BASE);
  });

  it('behavior: stable-coin priced, created, pre-multi-coin (nulls)', () => {
    const intent = checkoutIntentSchema.parse(createdCoinIntent);
    expect(intent).toMatchObject({
      currency: null,
      amount_cents: null,
      accepted_stable_coins: null,
      status: 1,
    });
  });

  it('behavior: routed through an ephemeral wallet: both hashes, failure message', () => {
    const intent = checkoutIntentSchema.parse({
      ...confirmedFiatIntent,
      status: -3,
      error_message: 'underpaid: 20.00 of 28.12',
      tx_hash_2: TX_2,
    });
    expect(intent.tx_hash_2).toBe(TX_2);
    expect(intent.error_message).toMatch(/underpaid/);
  });

  it('behavior: a currency above the listed 73 is still read (report metadata only)', () => {
    expect(checkoutIntentSchema.parse({ ...confirmedFiatIntent, currency: 120 }).currency).toBe(120);
  });

  it('behavior: inside the success envelope', () => {
    const envelope = envelopeSchema(checkoutIntentSchema).parse({
      code: 0,
      payload: confirmedFiatIntent,
      error: null,
      request_id: 'req_9',
    });
    expect(envelope.payload.status).toBe(20);
  });

  it.each([
    ['amount_coins as JSON number', { amount_coins: 28.12 }],
    ['actual_paid_amount as JSON number', { actual_paid_amount: 28.12 }],
    ['amount_coins with exponent', { amount_coins: '2.812e1' }],
    ['amount_cents beyond 2^53', { amount_cents: 2 ** 53 }],
    ['amount_cents fractional', { amount_cents: 25.99 }],
    ['amount_cents as string', { amount_cents: '2599' }],
    ['unknown status', { status: 7 }],
    ['currency zero', { currency: 0 }],
    ['currency by name', { currency: 'EUR' }],
    ['unknown coin symbol', { coin_symbol: 'DAI' }],
    ['unknown payment method', { payment_method_type: 9 }],
    ['bad bitmask', { accepted_stable_coins: 4 }],
    ['short address', { tx_to: '0x1234' }],
    ['hash as address', { tx_from: TX_1 }],
    ['tx_to missing', { tx_to: undefined }],
    // Values PostgreSQL or the ledger would refuse on every retry (a poison intent).
    ['currency above a PostgreSQL integer', { currency: 2 ** 31 }],
    ['actual_paid_amount of 79 digits', { actual_paid_amount: '1'.repeat(79) }],
    ['net_income_amount of 131,073 digits', { net_income_amount: '1'.repeat(131_073) }],
    ['id over 200 characters', { all_svc_checkout_intent_id: 'a'.repeat(201) }],
  ])('error: %s', (_case, patch) => {
    expect(checkoutIntentSchema.safeParse({ ...confirmedFiatIntent, ...patch }).success).toBe(false);
  });

  it('behavior: the largest values a row and a posting can hold are read', () => {
    const intent = checkoutIntentSchema.parse({
      ...confirmedFiatIntent,
      currency: 2 ** 31 - 1,
      actual_paid_amount: `${'9'.repeat(72)}.123456`,
      amount_coins: '9'.repeat(78),
    });
    expect(intent.currency).toBe(2 ** 31 - 1);
    expect(intent.actual_paid_amount).toBe(`${'9'.repeat(72)}.123456`);
  });
});

describe('create checkout intent request', () => {
  it('behavior: fiat priced with settlement coins', () => {
    const req = createCheckoutIntentRequestSchema.parse({
      currency: 1,
      amount_cents: 1999n,
      order_id: 'ord_1',
      redirect_url: 'https://shop.example/thanks',
      extra: { cart: 'c_77' },
      accepted_stable_coins: [2, 1],
    });
    expect(req.amount_cents).toBe(1999n);
    expect(req.accepted_stable_coins).toEqual([2, 1]);
  });

  it('behavior: stable-coin priced, currency null', () => {
    const req = createCheckoutIntentRequestSchema.parse({
      currency: null,
      stable_coin: 2,
      amount_cents: 1500n,
    });
    expect(req.stable_coin).toBe(2);
  });

  it('error: both currency and stable_coin', () => {
    const result = createCheckoutIntentRequestSchema.safeParse({
      currency: 1,
      stable_coin: 1,
      amount_cents: 100n,
    });
    expect(result.error?.issues.map((i) => i.message)).toEqual([
      'set exactly one of currency (fiat pricing) or stable_coin (native stable-coin pricing); got both',
    ]);
  });

  it.each([{ amount_cents: 100n }, { currency: null, stable_coin: null, amount_cents: 100n }])(
    'error: neither currency nor stable_coin %#',
    (body) => {
      const result = createCheckoutIntentRequestSchema.safeParse(body);
      expect(result.error?.issues[0]?.message).toMatch(/exactly one of currency .* got neither/);
    },
  );

  it.each([
    ['amount_cents as number', { stable_coin: 1, amount_cents: 100 }],
    ['amount_cents zero', { stable_coin: 1, amount_cents: 0n }],
    ['amount_cents beyond 2^53', { stable_coin: 1, amount_cents: 2n ** 53n }],
    ['stable_coin 3', { stable_coin: 3, amount_cents: 100n }],
    ['currency by name', { currency: 'USD', amount_cents: 100n }],
    ['empty accepted_stable_coins', { currency: 1, amount_cents: 100n, accepted_stable_coins: [] }],
    ['bad accepted_stable_coins', { currency: 1, amount_cents: 100n, accepted_stable_coins: [1, 4] }],
    ['accepted_stable_coins as bitmask', { currency: 1, amount_cents: 100n, accepted_stable_coins: 3 }],
    ['order_id number', { currency: 1, amount_cents: 100n, order_id: 17 }],
  ])('error: %s', (_case, body) => {
    expect(createCheckoutIntentRequestSchema.safeParse(body).success).toBe(false);
  });
});

describe('create checkout intent result', () => {
  const result = {
    checkout_url: 'https://pay.svc.example/checkout/665f1c2e9b1d4a0012ab34cd',
    allsvc_checkout_intent_id: '665f1c2e9b1d4a0012ab34cd',
    amount_coins: '28.12',
    stable_coin_type: 2,
    rate: '1.0819',
    accepted_stable_coins: 3,
  };

  it('behavior: parses', () => {
    expect(createCheckoutIntentResultSchema.parse(result)).toEqual(result);
    expect(
      createCheckoutIntentResultSchema.parse({ ...result, rate: null, accepted_stable_coins: null }).rate,
    ).toBeNull();
  });

  it.each([{ stable_coin_type: 3 }, { amount_coins: 28.12 }, { checkout_url: 'not a url' }, { rate: 1.08 }])(
    'error: rejects %j',
    (patch) => {
      expect(createCheckoutIntentResultSchema.safeParse({ ...result, ...patch }).success).toBe(false);
    },
  );
});

describe('status payload', () => {
  it('behavior: a bare integer', () => {
    expect(checkoutIntentStatusPayloadSchema.parse(10)).toBe(10);
    expect(checkoutIntentStatusPayloadSchema.safeParse({ status: 10 }).success).toBe(false);
    expect(checkoutIntentStatusPayloadSchema.safeParse(11).success).toBe(false);
  });
});
