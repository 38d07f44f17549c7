/**
 * Paying checkout intents through the sandbox's control API: every route and outcome moves real
 * tokens, and the chain, read independently with viem, agrees with what the API reports (P, F and
 * N). Also: the control API's refusals, forced statuses, the inactivity timeout on the sandbox
 * clock, and the signed checkout webhook, verified with an implementation written here.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Address, createPublicClient, erc20Abi, type Hash, http, parseEventLogs } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxChain } from '../../../src/sandbox/chain/types.ts';
import type { SandboxIntentView } from '../../../src/sandbox/checkout/checkoutEngine.ts';
import type { SvcClient } from '../../../src/svc/client.ts';
import type { CheckoutIntent } from '../../../src/svc/models/checkoutIntent.ts';
import { checkoutWebhookPayloadSchema } from '../../../src/svc/models/checkoutWebhook.ts';
import { startTestSandbox, type TestSandbox, testStore } from '../../helpers/sandboxHarness.ts';

const CHAIN_ID = 11155111;
/** BNB: the tokens have 18 decimals there. */
const BNB_CHAIN_ID = 56;
/** Default service fee of temporary-wallet payments: 1% (100 basis points), rounded down. */
const FEE_BPS = 100n;

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}
const received: Received[] = [];
let receiver: Server;
let sb: TestSandbox;
let chain: SandboxChain;
let rpc: ReturnType<typeof createPublicClient>;

// startTestSandbox's own afterAll is not registered when it is called inside beforeAll: stop it here.
afterAll(() => sb?.stop(), 60_000);
beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  sb = await startTestSandbox({
    config: {
      rate_limit: { requests_per_second: 10_000, burst: 10_000 },
      businesses: [
        {
          business_id: 'biz_1',
          stores: [
            testStore('st_a', {
              accepted_stable_coins: [1, 2],
              checkout_webhook_url: `http://127.0.0.1:${port}/hooks/checkout?src=sandbox`,
            }),
            testStore('st_quiet'),
          ],
        },
      ],
    },
    chains: [CHAIN_ID, BNB_CHAIN_ID],
  });
  const first = sb.world.chains.get(CHAIN_ID);
  if (!first) throw new Error('the test sandbox has no Sepolia chain');
  chain = first;
  rpc = createPublicClient({ transport: http(chain.rpcUrl) });
}, 120_000);
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

/** Signs with the sandbox clock, so requests stay within the skew after the clock is advanced. */
const client = (storeId = 'st_a'): SvcClient => sb.client(storeId, { clock: sb.world.clock });

const pay = (id: string, body: Record<string, unknown> = {}) =>
  sb.control<SandboxIntentView & { error?: string }>(`/_sandbox/intents/${id}/pay`, body);
const force = (id: string, status: string | number) =>
  sb.control<SandboxIntentView & { error?: string }>(`/_sandbox/intents/${id}/status`, { status });

/** Balances read straight from the token contract, not through the sandbox. */
async function balance(symbol: 'USDT' | 'USDC', owner: Address): Promise<bigint> {
  return rpc.readContract({
    address: chain.tokens[symbol].address,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [owner],
  });
}

/** The one Transfer of the token in a mined transaction. */
async function transferIn(hash: string, symbol: 'USDT' | 'USDC') {
  const receipt = await rpc.getTransactionReceipt({ hash: hash as Hash });
  expect(receipt.status).toBe('success');
  const logs = parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: 'Transfer' }).filter(
    (l) => l.address.toLowerCase() === chain.tokens[symbol].address.toLowerCase(),
  );
  expect(logs).toHaveLength(1);
  const log = logs[0];
  if (!log) throw new Error('no Transfer');
  return { from: log.args.from.toLowerCase(), to: log.args.to.toLowerCase(), value: log.args.value };
}

const units = (text: string | null) => {
  if (text === null) throw new Error('amount is null');
  const [whole = '', fraction = ''] = text.split('.');
  return BigInt(whole + fraction.padEnd(chain.decimals, '0'));
};
const lower = (a: string | null | undefined) => (a ?? '').toLowerCase();

async function newIntent(body: Parameters<SvcClient['createCheckoutIntent']>[0], storeId = 'st_a') {
  const created = await client(storeId).createCheckoutIntent(body);
  return created.allsvc_checkout_intent_id;
}

const names = (view: SandboxIntentView) => view.sandbox.history.map((h) => h.name);

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('pay: the chain agrees with the API', () => {
  // [case, create body, pay body, coin paid, route]
  const confirmed: Array<
    [
      string,
      Parameters<SvcClient['createCheckoutIntent']>[0],
      Record<string, unknown>,
      'USDT' | 'USDC',
      string,
    ]
  > = [
    [
      'exact amount through the temporary wallet',
      { stable_coin: 1, amount_cents: 2500n },
      {},
      'USDT',
      'temp_wallet',
    ],
    [
      'fiat intent, exact converted amount',
      { currency: 44, amount_cents: 1000n },
      { route: 'temp_wallet', outcome: 'confirmed' },
      'USDT',
      'temp_wallet',
    ],
    [
      'overpayment is confirmed',
      { stable_coin: 1, amount_cents: 1000n },
      { amount: '12.345678' },
      'USDT',
      'temp_wallet',
    ],
    [
      'the other accepted coin',
      { stable_coin: 1, amount_cents: 1500n },
      { coin: 'USDC' },
      'USDC',
      'temp_wallet',
    ],
    [
      'direct to the merchant wallet',
      { stable_coin: 1, amount_cents: 4200n },
      { route: 'direct' },
      'USDT',
      'direct',
    ],
    [
      'direct overpayment in USDC',
      { stable_coin: 2, amount_cents: 300n },
      { route: 'direct', coin: 2, amount: '3.5' },
      'USDC',
      'direct',
    ],
  ];

  it.each(confirmed)('behavior: %s -> CONFIRMED', async (_name, createBody, payBody, symbol, route) => {
    const id = await newIntent(createBody);
    const merchant = await chain.wallet('merchant:st_a');
    const merchantBefore = await balance(symbol, merchant);

    const { status, body } = await pay(id, payBody);
    expect(status).toBe(200);
    expect(body.status).toBe(20);
    const intent: CheckoutIntent = await client().getCheckoutIntent(id);
    expect(intent.status).toBe(20);
    expect(intent.coin_symbol).toBe(symbol);
    expect(lower(intent.coin_contract)).toBe(lower(chain.tokens[symbol].address));
    expect(intent.chain_id).toBe(CHAIN_ID);
    expect(lower(intent.tx_to)).toBe(lower(merchant));
    expect(intent.payment_method_type).toBe(1);

    const P = units(intent.actual_paid_amount);
    const F = units(intent.service_fee_amount);
    const N = units(intent.net_income_amount);
    const R = units(intent.amount_coins);
    expect(P).toBe(payBody.amount ? units(String(payBody.amount)) : R);
    expect(N).toBe(P - F);
    expect(F).toBe(route === 'direct' ? 0n : (P * FEE_BPS) / 10_000n);

    const buyer = body.sandbox.payment?.buyer_wallet ?? '';
    expect(lower(intent.tx_from)).toBe(lower(buyer));
    // Buyer -> (temporary wallet ->) merchant, exactly P, F and N.
    expect(await balance(symbol, buyer as Address)).toBe(0n);
    expect((await balance(symbol, merchant)) - merchantBefore).toBe(N);
    const first = await transferIn(intent.tx_hash ?? '', symbol);
    expect(first.from).toBe(lower(buyer));
    expect(first.value).toBe(P);
    if (route === 'direct') {
      expect(intent.tx_hash_2).toBeNull();
      expect(body.sandbox.payment?.temp_wallet).toBeNull();
      expect(first.to).toBe(lower(merchant));
      expect(names(body)).toEqual(['CREATED', 'ON_CHAIN', 'CONFIRMED']);
    } else {
      const temp = body.sandbox.payment?.temp_wallet as Address;
      expect(first.to).toBe(lower(temp));
      const second = await transferIn(intent.tx_hash_2 ?? '', symbol);
      expect(second).toEqual({ from: lower(temp), to: lower(merchant), value: N });
      expect(await balance(symbol, temp)).toBe(F);
      expect(names(body)).toEqual(['CREATED', 'TEMP_WALLET_RECEIVED', 'ON_CHAIN', 'CONFIRMED']);
    }
  });

  // [case, pay body, final status, history, route]
  const refunded: Array<[string, Record<string, unknown>, number, string[]]> = [
    [
      'underpaid through the temporary wallet',
      { amount: '4.2', outcome: 'underpaid' },
      -3,
      ['CREATED', 'TEMP_WALLET_RECEIVED', 'SEND_BACK', 'UNDERPAID'],
    ],
    [
      'underpaid by amount alone',
      { amount: '9.999999' },
      -3,
      ['CREATED', 'TEMP_WALLET_RECEIVED', 'SEND_BACK', 'UNDERPAID'],
    ],
    [
      'underpaid without an amount (half)',
      { outcome: 'underpaid' },
      -3,
      ['CREATED', 'TEMP_WALLET_RECEIVED', 'SEND_BACK', 'UNDERPAID'],
    ],
    [
      'underpaid directly',
      { amount: '1', route: 'direct' },
      -3,
      ['CREATED', 'ON_CHAIN', 'SEND_BACK', 'UNDERPAID'],
    ],
    [
      'rejected by KYT',
      { outcome: 'rejected' },
      -2,
      ['CREATED', 'TEMP_WALLET_RECEIVED', 'SEND_BACK', 'REJECTED'],
    ],
  ];
  it.each(refunded)('behavior: %s -> funds sent back on chain', async (_name, payBody, final, history) => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 1000n });
    const merchant = await chain.wallet('merchant:st_a');
    const merchantBefore = await balance('USDT', merchant);

    const { status, body } = await pay(id, payBody);
    expect(status).toBe(200);
    expect(body.status).toBe(final);
    expect(names(body)).toEqual(history);
    const intent = await client().getCheckoutIntent(id);
    expect(intent.status).toBe(final);
    expect(intent.error_message).toEqual(expect.any(String));
    expect(intent.tx_hash_2).toBeNull();
    expect(intent.service_fee_amount).toBeNull();
    expect(intent.net_income_amount).toBeNull();
    const P = units(intent.actual_paid_amount);
    if (payBody.amount) expect(P).toBe(units(String(payBody.amount)));
    if (final === -3) expect(P < units(intent.amount_coins)).toBe(true);

    const buyer = body.sandbox.payment?.buyer_wallet as Address;
    const refund = await transferIn(body.sandbox.payment?.refund_tx_hash ?? '', 'USDT');
    expect(refund.to).toBe(lower(buyer));
    expect(refund.value).toBe(P);
    expect(await balance('USDT', buyer)).toBe(P);
    expect(await balance('USDT', merchant)).toBe(merchantBefore);
    const temp = body.sandbox.payment?.temp_wallet;
    if (temp) expect(await balance('USDT', temp as Address)).toBe(0n);
    expect(await client().getCheckoutIntentStatus(id)).toBe(final);
  });

  it('behavior: manual parks the funds in the temporary wallet; forcing CONFIRMED sweeps them', async () => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 800n });
    const parked = await pay(id, { outcome: 'manual' });
    expect(parked.body.status).toBe(4);
    expect(names(parked.body)).toEqual(['CREATED', 'TEMP_WALLET_RECEIVED', 'MANUAL_OPERATION']);
    const temp = parked.body.sandbox.payment?.temp_wallet as Address;
    expect(await balance('USDT', temp)).toBe(units('8'));
    expect(parked.body.tx_hash_2).toBeNull();

    const merchant = await chain.wallet('merchant:st_a');
    const before = await balance('USDT', merchant);
    const resolved = await force(id, 'CONFIRMED');
    expect(resolved.status).toBe(200);
    expect(resolved.body.status).toBe(20);
    const intent = await client().getCheckoutIntent(id);
    const N = units(intent.net_income_amount);
    expect(units(intent.service_fee_amount)).toBe((units('8') * FEE_BPS) / 10_000n);
    expect((await balance('USDT', merchant)) - before).toBe(N);
    expect(await balance('USDT', temp)).toBe(units(intent.service_fee_amount));
  });

  it('behavior: manual then forced REJECTED sends the funds back', async () => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 800n });
    const parked = await pay(id, { outcome: 'manual' });
    const resolved = await force(id, -2);
    expect(resolved.body.status).toBe(-2);
    expect(names(resolved.body).slice(-2)).toEqual(['SEND_BACK', 'REJECTED']);
    expect(await balance('USDT', parked.body.sandbox.payment?.temp_wallet as Address)).toBe(0n);
    expect(await balance('USDT', parked.body.sandbox.payment?.buyer_wallet as Address)).toBe(units('8'));
  });
});

describe('pay on another simulated chain', () => {
  it('behavior: paying on BNB (18 decimals) moves the intent there and the amounts stay exact', async () => {
    const bnb = sb.world.chains.get(BNB_CHAIN_ID);
    if (!bnb) throw new Error('no BNB chain');
    const bnbRpc = createPublicClient({ transport: http(bnb.rpcUrl) });
    const bnbBalance = (owner: string) =>
      bnbRpc.readContract({
        address: bnb.tokens.USDT.address,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [owner as Address],
      });
    const id = await newIntent({ currency: 44, amount_cents: 1000n });
    expect((await client().getCheckoutIntent(id)).chain_id).toBe(CHAIN_ID);
    const merchant = await bnb.wallet('merchant:st_a');
    const before = await bnbBalance(merchant);

    const { status, body } = await pay(id, { chain_id: BNB_CHAIN_ID });
    expect(status).toBe(200);
    const intent = await client().getCheckoutIntent(id);
    expect(intent).toMatchObject({
      status: 20,
      chain_id: BNB_CHAIN_ID,
      amount_coins: '10.869565',
      actual_paid_amount: '10.869565',
    });
    expect(lower(intent.coin_contract)).toBe(lower(bnb.tokens.USDT.address));
    expect(lower(intent.tx_to)).toBe(lower(merchant));
    const P = 10_869_565n * 10n ** 12n;
    const F = (P * FEE_BPS) / 10_000n;
    expect(intent.service_fee_amount).toBe('0.10869565');
    expect((await bnbBalance(merchant)) - before).toBe(P - F);
    expect(await bnbBalance(body.sandbox.payment?.temp_wallet ?? '')).toBe(F);
    expect(await bnbBalance(body.sandbox.payment?.buyer_wallet ?? '')).toBe(0n);
  });
});

describe('pay: control API refusals', () => {
  const cases: Array<[string, Record<string, unknown> | string, number, RegExp]> = [
    ['a coin the intent does not accept', { coin: 'USDC' }, 400, /not accepted/],
    ['a chain that is not simulated', { chain_id: 1 }, 400, /not simulated/],
    ['an amount as a JSON number', { amount: 5 }, 400, /amount/],
    ['an amount finer than the token', { amount: '1.0000001' }, 400, /precision/],
    ['a zero amount', { amount: '0' }, 400, /greater than 0/],
    ['confirmed with less than requested', { amount: '1', outcome: 'confirmed' }, 400, /underpaid/],
    ['underpaid with the full amount', { amount: '5', outcome: 'underpaid' }, 400, /below/],
    ['rejected on the direct route', { route: 'direct', outcome: 'rejected' }, 400, /temp_wallet/],
    ['an unknown outcome', { outcome: 'lost' }, 400, /outcome/],
    ['an unknown field', { amout: '5' }, 400, /amout|unrecognized/i],
  ];
  it.each(cases)('error: %s', async (_name, body, status, message) => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    const res = await sb.control<{ error: string }>(`/_sandbox/intents/${id}/pay`, body);
    expect(res.status).toBe(status);
    expect(res.body.error).toMatch(message);
    expect(await client('st_quiet').getCheckoutIntentStatus(id)).toBe(1);
  });

  it('error: a body that is not JSON is 400', async () => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n });
    const res = await fetch(`${sb.url}/_sandbox/intents/${id}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{oops',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('error: an unknown intent is 404, a paid one 409', async () => {
    expect((await pay('0123456789abcdef01234567')).status).toBe(404);
    expect((await pay('garbage')).status).toBe(404);
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    expect((await pay(id)).status).toBe(200);
    const again = await pay(id);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/CONFIRMED/);
  });

  it('error: two concurrent payments of one intent: one settles, the other is 409', async () => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    const results = await Promise.all([pay(id), pay(id)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });
});

describe('forced statuses', () => {
  it.each([
    ['VIEWED', 2],
    ['CANCELED', -4],
    ['TIMEOUT', -5],
    ['FAILED', -1],
    [10, 10],
  ])('behavior: force %s', async (status, value) => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    const res = await force(id, status);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe(value);
    expect(await client('st_quiet').getCheckoutIntentStatus(id)).toBe(value);
  });

  it.each([
    ['an unknown name', 'PAID', 400],
    ['an unknown integer', 7, 400],
    ['CONFIRMED without a payment', 'CONFIRMED', 409],
  ])('error: %s', async (_name, status, code) => {
    const id = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    const res = await force(id, status);
    expect(res.status).toBe(code);
    expect(res.body.error).toEqual(expect.any(String));
  });

  it('error: an unknown intent is 404', async () => {
    expect((await force('0123456789abcdef01234567', 'VIEWED')).status).toBe(404);
  });
});

describe('checkout webhook', () => {
  /** The spec's eight-line canonical string and HMAC, written independently of src/svc/signing. */
  function verify(r: Received, secret: string): boolean {
    const h = (name: string) => String(r.headers[name.toLowerCase()] ?? '');
    const url = new URL(r.url, 'http://receiver');
    const canonical = [
      'allsvc:webhook:v1',
      r.method,
      url.pathname,
      url.search.replace(/^\?/, ''),
      h('X-Webhook-Id'),
      h('X-Webhook-Timestamp'),
      h('X-Webhook-Nonce'),
      createHash('sha256').update(r.body, 'utf8').digest('hex'),
    ].join('\n');
    const expected = Buffer.from(`v1=${createHmac('sha256', secret).update(canonical).digest('base64')}`);
    const actual = Buffer.from(h('X-Webhook-Signature'));
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  const storeA = () => sb.config.businesses.flatMap((b) => b.stores).find((s) => s.store_id === 'st_a');

  it('behavior: CONFIRMED sends the spec payload, signed, X-Webhook-Id = webhook_id', async () => {
    const id = await newIntent({
      currency: 48,
      amount_cents: 1999n,
      order_id: 'ord-77',
      user_id: 'u-1',
      user_name: 'Grace',
      extra: { basket: ['tea'], n: 2 },
    });
    const paid = await pay(id, { amount: '30', payment_method_type: 2 });
    expect(paid.body.status).toBe(20);
    const hook = await waitFor('the webhook', () => received.find((r) => r.body.includes(id)));
    const store = storeA();
    if (!store) throw new Error('no st_a');

    expect(hook.method).toBe('POST');
    expect(hook.url).toBe('/hooks/checkout?src=sandbox');
    expect(hook.headers['content-type']).toMatch(/^application\/json/);
    expect(hook.headers['x-api-key']).toBe(store.api_key);
    expect(verify(hook, store.api_secret)).toBe(true);
    const skew = Math.abs(
      Number(hook.headers['x-webhook-timestamp']) - sb.world.clock.now().getTime() / 1000,
    );
    expect(skew).toBeLessThan(300);
    // amount_cents is the submitted integer, as a bare JSON integer.
    expect(hook.body).toContain('"amount_cents":1999');

    const body = JSON.parse(hook.body) as Record<string, unknown>;
    const intent = await client().getCheckoutIntent(id);
    expect(body).toEqual({
      all_svc_transaction_id: paid.body.sandbox.transaction_id,
      all_svc_checkout_intent_id: id,
      webhook_id: hook.headers['x-webhook-id'],
      amount_cents: 1999,
      currency: 48,
      currency_symbol: 'GBP',
      amount_coins: '25.303797',
      coin_contract_address: intent.coin_contract,
      coin_symbol: 'USDT',
      chain_id: CHAIN_ID,
      tx_hash: intent.tx_hash,
      tx_from: intent.tx_from,
      payment_method_type: 2,
      user_id: 'u-1',
      order_id: 'ord-77',
      user_name: 'Grace',
      extra_obj: { basket: ['tea'], n: 2 },
      status: 20,
      actual_paid_amount: '30',
    });
    expect(body.webhook_id).toBe(paid.body.sandbox.webhook_id);
    expect(checkoutWebhookPayloadSchema.safeParse(body).success).toBe(true);
  });

  it('behavior: a natively priced intent sends stable-coin cents and null fiat fields', async () => {
    const id = await newIntent({ stable_coin: 2, amount_cents: 1234n });
    await pay(id, { route: 'direct' });
    const hook = await waitFor('the webhook', () => received.find((r) => r.body.includes(id)));
    const body = JSON.parse(hook.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      amount_cents: 1234,
      currency: null,
      currency_symbol: null,
      amount_coins: '12.34',
      coin_symbol: 'USDC',
      actual_paid_amount: '12.34',
      extra_obj: null,
      status: 20,
    });
  });

  it('behavior: no webhook for refunded intents, nor for a store without checkout_webhook_url', async () => {
    const rejected = await newIntent({ stable_coin: 1, amount_cents: 500n });
    await pay(rejected, { outcome: 'rejected' });
    const quiet = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    expect((await pay(quiet)).body.status).toBe(20);
    const confirmed = await newIntent({ stable_coin: 1, amount_cents: 500n });
    await pay(confirmed);
    await waitFor('the later webhook', () => received.find((r) => r.body.includes(confirmed)));
    expect(received.some((r) => r.body.includes(rejected) || r.body.includes(quiet))).toBe(false);
    const logged = sb.world.webhooks.list().map((d) => d.body);
    expect(logged.some((b) => b.includes(rejected) || b.includes(quiet))).toBe(false);
  });
});

describe('inactivity timeout on the sandbox clock', () => {
  it('behavior: CREATED and VIEWED intents time out after 30 minutes; paid ones do not', async () => {
    const created = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    const viewed = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    await fetch(`${sb.url}/checkout/${viewed}`);
    const paid = await newIntent({ stable_coin: 1, amount_cents: 500n }, 'st_quiet');
    await pay(paid);

    expect((await sb.control('/_sandbox/clock/advance', { seconds: 29 * 60 })).status).toBe(200);
    const c = client('st_quiet');
    expect(await c.getCheckoutIntentStatus(created)).toBe(1);
    expect(await c.getCheckoutIntentStatus(viewed)).toBe(2);

    await sb.control('/_sandbox/clock/advance', { seconds: 2 * 60 });
    expect(await c.getCheckoutIntentStatus(created)).toBe(-5);
    expect(await c.getCheckoutIntentStatus(viewed)).toBe(-5);
    expect(await c.getCheckoutIntentStatus(paid)).toBe(20);
    // A timed-out intent cannot be paid.
    expect((await pay(created)).status).toBe(409);
  });
});
