/**
 * Conformance of the sandbox's checkout-intent routes to the spec: every create rule and error
 * code, FX conversion, the accepted_stable_coins bitmask, reads with their ownership rule, and the
 * hosted page's first view. Malformed requests, which the project's client refuses to send, go as
 * raw signed requests.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unixSeconds } from '../../../src/clock.ts';
import type { SandboxStore } from '../../../src/sandbox/sandboxConfig.ts';
import { SvcApiError } from '../../../src/svc/errors.ts';
import { checkoutIntentSchema } from '../../../src/svc/models/checkoutIntent.ts';
import { signRequest } from '../../../src/svc/signing/requestSignature.ts';
import { startTestSandbox, type TestSandbox, testStore } from '../../helpers/sandboxHarness.ts';

let sb: TestSandbox;
// startTestSandbox's own afterAll is not registered when it is called inside beforeAll: stop it here.
afterAll(() => sb?.stop(), 60_000);
beforeAll(async () => {
  sb = await startTestSandbox({
    config: {
      rate_limit: { requests_per_second: 10_000, burst: 10_000 },
      businesses: [
        {
          business_id: 'biz_1',
          stores: [
            testStore('st_a'),
            testStore('st_b'),
            testStore('st_both', { accepted_stable_coins: [1, 2] }),
            testStore('st_usdc', { accepted_stable_coins: [2] }),
          ],
        },
        { business_id: 'biz_2', stores: [testStore('st_c')] },
      ],
    },
  });
}, 120_000);

const store = (storeId: string): SandboxStore => {
  const found = sb.config.businesses.flatMap((b) => b.stores).find((s) => s.store_id === storeId);
  if (!found) throw new Error(`no store ${storeId}`);
  return found;
};

interface Envelope {
  code: number;
  payload: unknown;
  error: { message: string; details: Record<string, unknown> } | null;
  request_id: string;
}

/** A hand-signed request: for bodies the project's client would refuse to send. */
async function signed(
  method: 'GET' | 'POST',
  path: string,
  body?: string,
  storeId = 'st_a',
): Promise<{ status: number; envelope: Envelope }> {
  const s = store(storeId);
  const { headers } = signRequest({
    secret: s.api_secret,
    method,
    path,
    body: body ?? '',
    timestamp: unixSeconds(sb.world.clock),
    nonce: randomUUID(),
  });
  const res = await fetch(`${sb.url}${path}`, {
    method,
    headers: {
      'X-API-Key': s.api_key,
      ...headers,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body,
  });
  return { status: res.status, envelope: (await res.json()) as Envelope };
}

const create = (body: unknown, storeId = 'st_a') =>
  signed('POST', '/v1/checkout_intents/', typeof body === 'string' ? body : JSON.stringify(body), storeId);

describe('create checkout intent: validation (10001, HTTP 400)', () => {
  // [case, body, field named in error.details]
  const cases: Array<[string, unknown, string]> = [
    ['invalid JSON', '{"currency": 1, ', 'body'],
    ['a JSON array', '[1, 2]', 'body'],
    ['JSON null', 'null', 'body'],
    ['a JSON string', '"hello"', 'body'],
    ['an empty body', '', 'body'],
    ['both currency and stable_coin', { currency: 1, stable_coin: 1, amount_cents: 1000 }, 'currency'],
    ['neither currency nor stable_coin', { amount_cents: 1000 }, 'currency'],
    ['both null', { currency: null, stable_coin: null, amount_cents: 1000 }, 'currency'],
    ['currency as a name', { currency: 'USD', amount_cents: 1000 }, 'currency'],
    ['currency as a numeric string', { currency: '1', amount_cents: 1000 }, 'currency'],
    ['currency 0', { currency: 0, amount_cents: 1000 }, 'currency'],
    ['currency 74 (above the documented enum)', { currency: 74, amount_cents: 1000 }, 'currency'],
    ['currency a fraction', { currency: 1.5, amount_cents: 1000 }, 'currency'],
    ['currency a boolean', { currency: true, amount_cents: 1000 }, 'currency'],
    ['stable_coin as a name', { stable_coin: 'USDT', amount_cents: 1000 }, 'stable_coin'],
    ['stable_coin 3 (reserved)', { stable_coin: 3, amount_cents: 1000 }, 'stable_coin'],
    ['stable_coin 0', { stable_coin: 0, amount_cents: 1000 }, 'stable_coin'],
    ['amount_cents missing', { stable_coin: 1 }, 'amount_cents'],
    ['amount_cents a fraction', { stable_coin: 1, amount_cents: 1000.5 }, 'amount_cents'],
    ['amount_cents a negative fraction', { currency: 1, amount_cents: -0.5 }, 'amount_cents'],
    ['amount_cents a negative numeric string', { stable_coin: 1, amount_cents: '-500' }, 'amount_cents'],
    ['amount_cents a string', { stable_coin: 1, amount_cents: '1000' }, 'amount_cents'],
    ['amount_cents null', { stable_coin: 1, amount_cents: null }, 'amount_cents'],
    ['amount_cents beyond 2^53 - 1', '{"stable_coin":1,"amount_cents":9007199254740993}', 'amount_cents'],
    ['amount_cents below -(2^53 - 1)', '{"currency":1,"amount_cents":-9007199254740993}', 'amount_cents'],
    [
      'accepted_stable_coins empty',
      { currency: 1, amount_cents: 1000, accepted_stable_coins: [] },
      'accepted_stable_coins',
    ],
    [
      'accepted_stable_coins with a reserved coin',
      { currency: 1, amount_cents: 1000, accepted_stable_coins: [1, 3] },
      'accepted_stable_coins.1',
    ],
    [
      'accepted_stable_coins with a name',
      { currency: 1, amount_cents: 1000, accepted_stable_coins: ['USDC'] },
      'accepted_stable_coins.0',
    ],
    [
      'accepted_stable_coins not a list',
      { currency: 1, amount_cents: 1000, accepted_stable_coins: 1 },
      'accepted_stable_coins',
    ],
    ['order_id a number', { stable_coin: 1, amount_cents: 1000, order_id: 42 }, 'order_id'],
    ['user_name a boolean', { stable_coin: 1, amount_cents: 1000, user_name: false }, 'user_name'],
    ['redirect_url an object', { stable_coin: 1, amount_cents: 1000, redirect_url: {} }, 'redirect_url'],
    ['extra a string', { stable_coin: 1, amount_cents: 1000, extra: 'x' }, 'extra'],
    ['extra a list', { stable_coin: 1, amount_cents: 1000, extra: [1] }, 'extra'],
  ];
  it.each(cases)('error: %s', async (_name, body, field) => {
    const { status, envelope } = await create(body);
    expect(status).toBe(400);
    expect(envelope).toMatchObject({ code: 10001, payload: null, error: { message: 'Validation error' } });
    expect(envelope.error?.details).toHaveProperty([field]);
    expect(envelope.request_id).toEqual(expect.any(String));
  });
});

describe('create checkout intent: the 0.1-coin floor (50002, HTTP 400)', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['USDT at exactly 0.10', { stable_coin: 1, amount_cents: 10 }, 'USDT'],
    ['USDC at exactly 0.10', { stable_coin: 2, amount_cents: 10 }, 'USDC'],
    ['USDT below the floor', { stable_coin: 1, amount_cents: 1 }, 'USDT'],
    ['fiat USD 0.10 converts to 0.1 USDT', { currency: 1, amount_cents: 10 }, 'USDT'],
    [
      'fiat USD 0.10 settled in USDC',
      { currency: 1, amount_cents: 10, accepted_stable_coins: [2, 1] },
      'USDC',
    ],
    ['fiat JPY 15.13 is exactly 0.1 USDT at 151.3', { currency: 72, amount_cents: 1513 }, 'USDT'],
    ['fiat EUR 0.09 is 0.097826 USDT', { currency: 44, amount_cents: 9 }, 'USDT'],
    // Rule 4 sets the only lower bound: 0 and negative amounts are below the floor, not malformed.
    ['USDT amount_cents 0', { stable_coin: 1, amount_cents: 0 }, 'USDT'],
    ['USDC amount_cents -500', { stable_coin: 2, amount_cents: -500 }, 'USDC'],
    ['fiat USD amount_cents 0', { currency: 1, amount_cents: 0 }, 'USDT'],
    ['fiat EUR amount_cents -500', { currency: 44, amount_cents: -500 }, 'USDT'],
    [
      'fiat JPY amount_cents -500 settled in USDC',
      { currency: 72, amount_cents: -500, accepted_stable_coins: [2] },
      'USDC',
    ],
  ];
  it.each(cases)('error: %s', async (_name, body, coin) => {
    const { status, envelope } = await create(body);
    expect(status).toBe(400);
    expect(envelope.code).toBe(50002);
    expect(envelope.payload).toBeNull();
    expect(envelope.error?.message).toBe(`amount must be greater than 0.1 ${coin}`);
  });

  it('behavior: just above the floor is accepted (0.11 coin, JPY 15.14)', async () => {
    expect((await create({ stable_coin: 2, amount_cents: 11 })).envelope.payload).toMatchObject({
      amount_coins: '0.11',
    });
    expect((await create({ currency: 72, amount_cents: 1514 })).envelope.payload).toMatchObject({
      amount_coins: '0.100066',
    });
  });

  it('error: the project client surfaces 50002 with the coin in the message', async () => {
    const err = await sb
      .client('st_a')
      .createCheckoutIntent({ stable_coin: 2, amount_cents: 10n })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 50002, httpStatus: 400, message: expect.stringContaining('0.1 USDC') });
  });
});

describe('create checkout intent: pricing, conversion and the bitmask', () => {
  // [case, store, body, amount_coins, stable_coin_type, rate, accepted_stable_coins]
  const cases: Array<[string, string, Record<string, unknown>, string, number, string | null, number]> = [
    ['native USDT, 10.00', 'st_a', { stable_coin: 1, amount_cents: 1000 }, '10', 1, null, 1],
    ['native USDC, 10.50', 'st_a', { stable_coin: 2, amount_cents: 1050 }, '10.5', 2, null, 1],
    ['fiat USD 10.00 at 1', 'st_a', { currency: 1, amount_cents: 1000 }, '10', 1, '1', 1],
    [
      'fiat EUR 10.00 at 0.92, half-up',
      'st_a',
      { currency: 44, amount_cents: 1000 },
      '10.869565',
      1,
      '0.92',
      1,
    ],
    ['fiat GBP 19.99 at 0.79', 'st_a', { currency: 48, amount_cents: 1999 }, '25.303797', 1, '0.79', 1],
    [
      'fiat BHD 10.00 at 0.376 rounds up',
      'st_a',
      { currency: 16, amount_cents: 1000 },
      '26.595745',
      1,
      '0.376',
      1,
    ],
    ['fiat JPY 1513.00 at 151.3', 'st_a', { currency: 72, amount_cents: 151300 }, '10', 1, '151.3', 1],
    ['fiat KES 1000.00 at 132', 'st_a', { currency: 73, amount_cents: 100000 }, '7.575758', 1, '132', 1],
    [
      'fiat converts to the first accepted coin (USDC)',
      'st_a',
      { currency: 1, amount_cents: 500, accepted_stable_coins: [2, 1] },
      '5',
      2,
      '1',
      3,
    ],
    [
      'the request list sets the bitmask over the store setting',
      'st_both',
      { currency: 1, amount_cents: 500, accepted_stable_coins: [1] },
      '5',
      1,
      '1',
      1,
    ],
    [
      'the store setting sets the bitmask (both coins)',
      'st_both',
      { currency: 1, amount_cents: 500 },
      '5',
      1,
      '1',
      3,
    ],
    [
      'the store setting does not pick the conversion coin (USDT)',
      'st_usdc',
      { currency: 1, amount_cents: 500 },
      '5',
      1,
      '1',
      2,
    ],
    [
      'native pricing keeps its coin, bitmask from the store',
      'st_usdc',
      { stable_coin: 1, amount_cents: 700 },
      '7',
      1,
      null,
      2,
    ],
  ];
  it.each(cases)('behavior: %s', async (_name, storeId, body, amountCoins, coin, rate, flags) => {
    const { status, envelope } = await create(body, storeId);
    expect(status).toBe(200);
    expect(envelope.code).toBe(0);
    expect(envelope.error).toBeNull();
    const payload = envelope.payload as Record<string, unknown>;
    expect(payload).toEqual({
      checkout_url: `${sb.url}/checkout/${payload.allsvc_checkout_intent_id}`,
      allsvc_checkout_intent_id: expect.stringMatching(/^[0-9a-f]{24}$/),
      amount_coins: amountCoins,
      stable_coin_type: coin,
      rate,
      accepted_stable_coins: flags,
    });
    // The full intent agrees with the create result.
    const intent = await sb.client(storeId).getCheckoutIntent(String(payload.allsvc_checkout_intent_id));
    expect(intent.amount_coins).toBe(amountCoins);
    expect(intent.currency_rate).toBe(rate);
    expect(intent.coin_symbol).toBe(coin === 1 ? 'USDT' : 'USDC');
    expect(intent.accepted_stable_coins).toBe(flags);
    const chain = [...sb.world.chains.values()][0];
    expect(intent.coin_contract?.toLowerCase()).toBe(chain?.tokens[intent.coin_symbol].address.toLowerCase());
  });

  it('behavior: the path without the trailing slash is accepted too', async () => {
    const { status, envelope } = await signed(
      'POST',
      '/v1/checkout_intents',
      JSON.stringify({ stable_coin: 1, amount_cents: 200 }),
    );
    expect(status).toBe(200);
    expect(envelope.payload).toMatchObject({ amount_coins: '2' });
  });

  it('behavior: unknown fields are ignored', async () => {
    const { envelope } = await create({ stable_coin: 1, amount_cents: 300, coupon: 'X' });
    expect(envelope.code).toBe(0);
  });
});

describe('get checkout intent and its status', () => {
  it('behavior: a fiat intent has every field of the spec, fresh and unpaid', async () => {
    const client = sb.client('st_a');
    const created = await client.createCheckoutIntent({
      currency: 44,
      amount_cents: 2500n,
      order_id: 'ord-1',
      order_description: 'Two mugs',
      user_id: 'u-7',
      user_name: 'Ada',
      redirect_url: 'https://shop.example/done',
      extra: { cart: [1, 2] },
    });
    const id = created.allsvc_checkout_intent_id;
    const { status, envelope } = await signed('GET', `/v1/checkout_intents/${id}`);
    expect(status).toBe(200);
    const chain = [...sb.world.chains.values()][0];
    if (!chain) throw new Error('no chain');
    expect(envelope.payload).toEqual({
      all_svc_checkout_intent_id: id,
      currency: 44,
      currency_symbol: 'EUR',
      amount_cents: 2500,
      chain_id: chain.chainId,
      amount_coins: '27.173913',
      coin_symbol: 'USDT',
      coin_contract: chain.tokens.USDT.address,
      currency_rate: '0.92',
      status: 1,
      order_id: 'ord-1',
      order_description: 'Two mugs',
      user_id: 'u-7',
      user_name: 'Ada',
      error_message: null,
      tx_hash: null,
      tx_hash_2: null,
      tx_from: null,
      tx_to: await chain.wallet('merchant:st_a'),
      actual_paid_amount: null,
      service_fee_amount: null,
      net_income_amount: null,
      payment_method_type: 0,
      accepted_stable_coins: 1,
    });
    // The project's own model of the spec accepts it.
    expect(checkoutIntentSchema.safeParse(envelope.payload).success).toBe(true);
  });

  it('behavior: a natively priced intent has null fiat fields and currency_rate', async () => {
    const created = await sb.client('st_a').createCheckoutIntent({ stable_coin: 2, amount_cents: 1234n });
    const intent = await sb.client('st_a').getCheckoutIntent(created.allsvc_checkout_intent_id);
    expect(intent).toMatchObject({
      currency: null,
      currency_symbol: null,
      amount_cents: null,
      currency_rate: null,
      amount_coins: '12.34',
      coin_symbol: 'USDC',
      order_id: null,
      user_id: null,
    });
  });

  it('behavior: the status route answers a bare integer', async () => {
    const created = await sb.client('st_a').createCheckoutIntent({ stable_coin: 1, amount_cents: 500n });
    const { status, envelope } = await signed(
      'GET',
      `/v1/checkout_intents/${created.allsvc_checkout_intent_id}/status`,
    );
    expect(status).toBe(200);
    expect(envelope.payload).toBe(1);
    expect(await sb.client('st_a').getCheckoutIntentStatus(created.allsvc_checkout_intent_id)).toBe(1);
  });

  const missing: Array<[string, string]> = [
    ['an unknown id', '0123456789abcdef01234567'],
    ['a malformed id', 'not-an-object-id'],
    ['an uppercase id', 'ABCDEF0123456789ABCDEF01'],
  ];
  for (const route of ['', '/status']) {
    it.each(missing)(`error: 50001 (HTTP 404) for %s on GET .../{id}${route}`, async (_name, id) => {
      const { status, envelope } = await signed('GET', `/v1/checkout_intents/${id}${route}`);
      expect(status).toBe(404);
      expect(envelope).toMatchObject({ code: 50001, payload: null });
    });

    it.each([
      ['another store of the same business', 'st_b'],
      ['a store of another business', 'st_c'],
    ])(
      `error: 30001 (HTTP 403) when the intent belongs to %s, on GET .../{id}${route}`,
      async (_name, other) => {
        const created = await sb.client('st_a').createCheckoutIntent({ stable_coin: 1, amount_cents: 500n });
        const { status, envelope } = await signed(
          'GET',
          `/v1/checkout_intents/${created.allsvc_checkout_intent_id}${route}`,
          undefined,
          other,
        );
        expect(status).toBe(403);
        expect(envelope).toMatchObject({ code: 30001, payload: null });
      },
    );
  }

  it('error: the project client sees 50001 and 30001 as SvcApiError', async () => {
    await expect(sb.client('st_a').getCheckoutIntent('0123456789abcdef01234567')).rejects.toMatchObject({
      code: 50001,
      httpStatus: 404,
    });
    const created = await sb.client('st_a').createCheckoutIntent({ stable_coin: 1, amount_cents: 500n });
    await expect(
      sb.client('st_c').getCheckoutIntentStatus(created.allsvc_checkout_intent_id),
    ).rejects.toMatchObject({ code: 30001, httpStatus: 403 });
  });
});

describe('hosted checkout page', () => {
  it('behavior: the first GET of checkout_url moves CREATED to VIEWED; later views change nothing', async () => {
    const client = sb.client('st_a');
    const created = await client.createCheckoutIntent({
      stable_coin: 1,
      amount_cents: 999n,
      order_description: '<script>alert(1)</script>',
    });
    const id = created.allsvc_checkout_intent_id;
    // A HEAD (link preview) is not a view.
    expect((await fetch(created.checkout_url, { method: 'HEAD' })).status).toBe(200);
    expect(await client.getCheckoutIntentStatus(id)).toBe(1);

    const page = await fetch(created.checkout_url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('9.99 USDT');
    expect(html).not.toContain('<script>');
    expect(await client.getCheckoutIntentStatus(id)).toBe(2);

    await fetch(created.checkout_url);
    expect(await client.getCheckoutIntentStatus(id)).toBe(2);
    const history = await sb.control<{ sandbox: { history: Array<{ name: string }> } }>(
      `/_sandbox/intents/${id}`,
    );
    expect(history.body.sandbox.history.map((h) => h.name)).toEqual(['CREATED', 'VIEWED']);
  });

  it('error: an unknown intent page is 404', async () => {
    expect((await fetch(`${sb.url}/checkout/0123456789abcdef01234567`)).status).toBe(404);
    expect((await fetch(`${sb.url}/checkout/nope`)).status).toBe(404);
  });
});
