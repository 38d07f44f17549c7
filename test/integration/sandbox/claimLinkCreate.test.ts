import { describe, expect, it } from 'vitest';
import { SvcApiError } from '../../../src/svc/errors.ts';
import { startTestSandbox, testStore } from '../../helpers/sandboxHarness.ts';
import {
  BNB,
  CREATE_PATH,
  cancelPath,
  chainReader,
  clientFor,
  createBody,
  linkView,
  listLinks,
  rawSigned,
  ref,
  SEPOLIA,
  untilLinkSent,
} from './claimLinkTestKit.ts';

/**
 * Conformance of POST /v1/claim_link_auto_payouts: prerequisites (50104, 30002), every validation
 * rule (10001), idempotency (replay shape, 50106), funding failures (50103) and the funding
 * transfer as the chain shows it.
 */
const sb = await startTestSandbox({
  chains: [SEPOLIA.chainId, BNB.chainId],
  config: {
    rate_limit: { requests_per_second: 10_000, burst: 10_000 },
    businesses: [
      {
        business_id: 'biz_1',
        stores: [
          testStore('st_a'),
          testStore('st_b'),
          testStore('st_sandbox', { sandbox_key: true }),
          testStore('st_sandbox_noscope', { sandbox_key: true, scopes: [] }),
          testStore('st_noscope', { scopes: [] }),
          testStore('st_star', { scopes: ['*'] }),
          testStore('st_other_scope', { scopes: ['checkout:write'] }),
        ],
      },
      { business_id: 'biz_2', stores: [testStore('st_c')] },
    ],
  },
});
const sepolia = chainReader(sb, SEPOLIA.chainId);
const bnb = chainReader(sb, BNB.chainId);
const custody1 = await sepolia.custody('biz_1');
const FEE_6 = 500_000n; // the default funding fee, 0.5 coin, in 6-decimal units
const FEE_18 = 5n * 10n ** 17n;

describe('prerequisites', () => {
  it.each([
    ['error: sandbox API key is 50104', 'st_sandbox', 50104, 403],
    ['error: store without the scope is 30002', 'st_noscope', 30002, 403],
    ['error: the * scope does not grant claim_link:auto_payout (30002)', 'st_star', 30002, 403],
    ['error: another scope does not grant it (30002)', 'st_other_scope', 30002, 403],
    ['error: a sandbox key is refused before the scope is checked (50104)', 'st_sandbox_noscope', 50104, 403],
  ])('%s on create', async (_name, storeId, code, httpStatus) => {
    const before = await sepolia.balance('USDT', custody1);
    const res = await rawSigned(sb, storeId, CREATE_PATH, createBody({}));
    expect(res.status).toBe(httpStatus);
    expect(res.body).toMatchObject({ code, payload: null });
    expect(res.body.error?.message).toEqual(expect.any(String));
    await expect(
      clientFor(sb, storeId).createClaimLinkAutoPayout({
        amount: '1',
        stable_coin: 1,
        chain: 11,
        reference_id: ref(),
      }),
    ).rejects.toMatchObject({ code, httpStatus });
    expect(await sepolia.balance('USDT', custody1)).toBe(before);
  });

  it.each([
    ['error: sandbox API key is 50104', 'st_sandbox', 50104, 403],
    ['error: store without the scope is 30002', 'st_noscope', 30002, 403],
    ['error: the * scope does not grant it (30002)', 'st_star', 30002, 403],
  ])('%s on cancel, before the id is looked up', async (_name, storeId, code, httpStatus) => {
    const res = await rawSigned(sb, storeId, cancelPath('cl_000000000000000000000000'), '');
    expect(res.status).toBe(httpStatus);
    expect(res.body).toMatchObject({ code, payload: null });
  });

  it('error: prerequisites are checked before the body (50104 for an invalid body)', async () => {
    const res = await rawSigned(sb, 'st_sandbox', CREATE_PATH, 'not json');
    expect(res.status).toBe(403);
    expect(res.body.code).toBe(50104);
  });

  it('error: prerequisites are checked before the body (30002 for an invalid body)', async () => {
    const res = await rawSigned(sb, 'st_star', CREATE_PATH, '{"amount":1}');
    expect(res.status).toBe(403);
    expect(res.body.code).toBe(30002);
  });
});

describe('validation (10001)', () => {
  const longAscii = (n: number) => 'r'.repeat(n);
  const cases: Array<[string, string, string]> = [
    ['error: body is not JSON', '{"amount": "1",', 'body'],
    ['error: empty body', '', 'body'],
    ['error: body is a JSON array', '[]', 'body'],
    ['error: body is a JSON string', '"x"', 'body'],
    ['error: amount missing', JSON.stringify({ stable_coin: 1, chain: 11, reference_id: 'r1' }), 'amount'],
    ['error: amount as a JSON number', createBody({ amount: 1.5 }), 'amount'],
    ['error: amount as a JSON integer', createBody({ amount: 1 }), 'amount'],
    ['error: amount zero', createBody({ amount: '0' }), 'amount'],
    ['error: amount zero with decimals', createBody({ amount: '0.000000' }), 'amount'],
    ['error: amount negative', createBody({ amount: '-1' }), 'amount'],
    ['error: amount with exponent', createBody({ amount: '1e3' }), 'amount'],
    ['error: amount with spaces', createBody({ amount: ' 1' }), 'amount'],
    ['error: amount not a number', createBody({ amount: 'ten' }), 'amount'],
    ['error: amount infinite', createBody({ amount: 'Infinity' }), 'amount'],
    ['error: amount with a bare dot', createBody({ amount: '1.' }), 'amount'],
    ['error: amount null', createBody({ amount: null }), 'amount'],
    ['error: amount finer than 6 decimals on Sepolia', createBody({ amount: '1.0000001' }), 'amount'],
    [
      'error: amount finer than 6 decimals even when the extra digit is 0',
      createBody({ amount: '1.0000000' }),
      'amount',
    ],
    [
      'error: amount finer than 18 decimals on BNB',
      createBody({ chain: BNB.serviceChain, amount: '1.0000000000000000001' }),
      'amount',
    ],
    [
      'error: stable_coin missing',
      JSON.stringify({ amount: '1', chain: 11, reference_id: 'r1' }),
      'stable_coin',
    ],
    ['error: stable_coin as a string', createBody({ stable_coin: '1' }), 'stable_coin'],
    ['error: stable_coin as a name', createBody({ stable_coin: 'USDT' }), 'stable_coin'],
    ['error: stable_coin 3 is reserved', createBody({ stable_coin: 3 }), 'stable_coin'],
    ['error: stable_coin 0', createBody({ stable_coin: 0 }), 'stable_coin'],
    ['error: stable_coin fractional', createBody({ stable_coin: 1.5 }), 'stable_coin'],
    ['error: chain missing', JSON.stringify({ amount: '1', stable_coin: 1, reference_id: 'r1' }), 'chain'],
    ['error: chain as a string', createBody({ chain: '11' }), 'chain'],
    ['error: chain not in the enum (2)', createBody({ chain: 2 }), 'chain'],
    ['error: chain given as an EIP-155 id (56)', createBody({ chain: 56 }), 'chain'],
    ['error: chain given as an EIP-155 id (11155111)', createBody({ chain: 11155111 }), 'chain'],
    ['error: chain fractional', createBody({ chain: 11.5 }), 'chain'],
    ['error: chain in the enum but not simulated by this sandbox (1)', createBody({ chain: 1 }), 'chain'],
    [
      'error: reference_id missing',
      JSON.stringify({ amount: '1', stable_coin: 1, chain: 11 }),
      'reference_id',
    ],
    ['error: reference_id empty', createBody({ reference_id: '' }), 'reference_id'],
    ['error: reference_id blank', createBody({ reference_id: '   ' }), 'reference_id'],
    ['error: reference_id with a space', createBody({ reference_id: 'order 1' }), 'reference_id'],
    ['error: reference_id with a tab', createBody({ reference_id: 'order\t1' }), 'reference_id'],
    [
      'error: reference_id with a control character',
      createBody({ reference_id: 'order\u00071' }),
      'reference_id',
    ],
    ['error: reference_id with DEL', createBody({ reference_id: 'order\u007f' }), 'reference_id'],
    ['error: reference_id non-ASCII', createBody({ reference_id: 'ordré' }), 'reference_id'],
    ['error: reference_id of 129 characters', createBody({ reference_id: longAscii(129) }), 'reference_id'],
    ['error: reference_id as a number', createBody({ reference_id: 12345 }), 'reference_id'],
    ['error: reference_id null', createBody({ reference_id: null }), 'reference_id'],
    [
      'error: receiver_email of 255 characters',
      createBody({ receiver_email: 'e'.repeat(255) }),
      'receiver_email',
    ],
    ['error: receiver_email not a string', createBody({ receiver_email: 5 }), 'receiver_email'],
    [
      'error: sender_display_name of 101 characters',
      createBody({ sender_display_name: 'n'.repeat(101) }),
      'sender_display_name',
    ],
    [
      'error: sender_message of 501 characters',
      createBody({ sender_message: 'm'.repeat(501) }),
      'sender_message',
    ],
  ];

  it.each(cases)('%s', async (_name, body, field) => {
    const res = await rawSigned(sb, 'st_a', CREATE_PATH, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 10001, payload: null, error: { message: 'Validation error' } });
    expect(res.body.error?.details).toMatchObject({ field, reason: expect.any(String) });
  });

  it('behavior: a rejected request moves no money and creates no link', async () => {
    const before = { usdt: await sepolia.balance('USDT', custody1), links: (await listLinks(sb)).length };
    for (const [, body] of cases.slice(0, 10)) await rawSigned(sb, 'st_a', CREATE_PATH, body);
    expect(await sepolia.balance('USDT', custody1)).toBe(before.usdt);
    expect((await listLinks(sb)).length).toBe(before.links);
  });

  it('error: the client refuses a JSON-number amount before sending it', async () => {
    await expect(
      clientFor(sb, 'st_a').createClaimLinkAutoPayout({
        amount: 1 as unknown as string,
        stable_coin: 1,
        chain: 11,
        reference_id: ref(),
      }),
    ).rejects.toThrow(/amount/);
  });

  it.each([
    ['reference_id of 1 character', { reference_id: `${Date.now() % 10}` }],
    ['reference_id of 128 characters', { reference_id: `${ref()}${'x'.repeat(128)}`.slice(0, 128) }],
    [
      'reference_id of every printable non-space ASCII class',
      { reference_id: `${ref()}!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~` },
    ],
    ['amount with exactly 6 decimals on Sepolia', { amount: '0.000001' }],
    ['amount with exactly 18 decimals on BNB', { chain: BNB.serviceChain, amount: '0.000000000000000001' }],
    [
      'text fields at their maximum lengths',
      {
        receiver_email: 'e'.repeat(254),
        sender_display_name: 'n'.repeat(100),
        sender_message: 'm'.repeat(500),
      },
    ],
    ['optional text fields null', { receiver_email: null, sender_display_name: null, sender_message: null }],
    ['unknown extra fields are ignored', { extra_field: { nested: true } }],
    ['USDC', { stable_coin: 2 }],
  ])('behavior: accepts %s', async (_name, fields) => {
    const res = await rawSigned(sb, 'st_a', CREATE_PATH, createBody({ reference_id: ref(), ...fields }));
    expect(res.body.error).toBeNull();
    expect(res.status).toBe(200);
    expect(res.body.payload).toMatchObject({ idempotent_hit: false, status: 'pending_deposit' });
  });
});

describe('create and fund', () => {
  it('behavior: the create result has the spec shape and the chain agrees with it (6 decimals)', async () => {
    const client = clientFor(sb, 'st_a');
    const fees = await sb.world.chains.get(SEPOLIA.chainId)!.wallet(`fees:${SEPOLIA.chainId}`);
    const before = {
      custody: await sepolia.balance('USDT', custody1),
      fees: await sepolia.balance('USDT', fees),
    };
    const referenceId = ref('shape');
    const result = await client.createClaimLinkAutoPayout({
      amount: '12.345600',
      stable_coin: 1,
      chain: 11,
      reference_id: referenceId,
      receiver_email: 'someone@example.com',
      sender_display_name: 'Shop',
      sender_message: 'thanks',
    });
    expect(result).toEqual({
      claim_link_id: expect.stringMatching(/^cl_[0-9a-f]{24}$/),
      reference_id: referenceId,
      amount: '12.3456',
      token_symbol: 'USDT',
      chain_id: SEPOLIA.chainId,
      status: 'pending_deposit',
      token: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      claim_url: expect.any(String),
      funding_tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      funded_amount: '12.3456',
      idempotent_hit: false,
    });
    expect(result.claim_url).toBe(`${sb.url}/claim/${result.token}`);

    const amount = 12_345_600n;
    const view = await linkView(sb, result.claim_link_id);
    const pool = view.pool_address;
    expect(await sepolia.balance('USDT', custody1)).toBe(before.custody - amount - FEE_6);
    expect(await sepolia.balance('USDT', pool)).toBe(amount);
    expect(await sepolia.balance('USDT', fees)).toBe(before.fees + FEE_6);
    // The funding transaction is one transfer custody -> pool of amount + fee (docs/accounting.md, rule 5's X).
    expect(await sepolia.transfers(result.funding_tx_hash as `0x${string}`)).toEqual([
      { token: sepolia.token('USDT'), from: custody1, to: pool, value: amount + FEE_6 },
    ]);
    expect(view).toMatchObject({
      status: 'pending_deposit',
      amount: '12.3456',
      fee_amount: '0.5',
      funding_total: '12.8456',
      funded_amount: '12.3456',
      custody_address: custody1,
      funding_tx_hash: result.funding_tx_hash,
      receiver_email: 'someone@example.com',
    });
  });

  it('behavior: USDC on BNB with 18 decimals; the chain agrees', async () => {
    const custody = await bnb.custody('biz_1');
    const before = await bnb.balance('USDC', custody);
    const result = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
      amount: '1.000000000000000001',
      stable_coin: 2,
      chain: BNB.serviceChain,
      reference_id: ref('bnb'),
    });
    expect(result).toMatchObject({
      chain_id: 56,
      token_symbol: 'USDC',
      amount: '1.000000000000000001',
      funded_amount: '1.000000000000000001',
    });
    const amount = 10n ** 18n + 1n;
    const view = await linkView(sb, result.claim_link_id);
    expect(await bnb.balance('USDC', custody)).toBe(before - amount - FEE_18);
    expect(await bnb.balance('USDC', view.pool_address)).toBe(amount);
    expect(await bnb.transfers(result.funding_tx_hash as `0x${string}`)).toEqual([
      { token: bnb.token('USDC'), from: custody, to: view.pool_address, value: amount + FEE_18 },
    ]);
  });

  it('behavior: pending_deposit becomes link_sent after the scanner delay', async () => {
    const result = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
      amount: '2',
      stable_coin: 1,
      chain: 11,
      reference_id: ref('scan'),
    });
    expect((await linkView(sb, result.claim_link_id)).status).toBe('pending_deposit');
    await untilLinkSent(sb, result.claim_link_id);
  });

  it('behavior: the control API never shows the bearer token, the claim page does not echo it', async () => {
    const result = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
      amount: '3.5',
      stable_coin: 1,
      chain: 11,
      reference_id: ref('secret'),
      sender_display_name: '<b>Shop</b>',
    });
    const token = result.token!;
    expect(JSON.stringify(await listLinks(sb))).not.toContain(token);
    expect(JSON.stringify(await linkView(sb, result.claim_link_id))).not.toContain(token);
    const page = await fetch(result.claim_url!);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const html = await page.text();
    expect(html).toContain('3.5 USDT');
    expect(html).toContain('&lt;b&gt;Shop&lt;/b&gt;');
    expect(html).not.toContain(token);
    expect(html).not.toContain(result.claim_link_id);
    expect((await fetch(`${sb.url}/claim/not-a-token`)).status).toBe(404);
  });
});

describe('idempotency', () => {
  it('behavior: a replay returns the original link with the replay shape and moves no money', async () => {
    const client = clientFor(sb, 'st_a');
    const request = {
      amount: '4.25',
      stable_coin: 1 as const,
      chain: 11 as const,
      reference_id: ref('replay'),
    };
    const first = await client.createClaimLinkAutoPayout(request);
    const afterFirst = await sepolia.balance('USDT', custody1);
    const second = await client.createClaimLinkAutoPayout(request);
    expect(second).toEqual({
      claim_link_id: first.claim_link_id,
      reference_id: request.reference_id,
      amount: '4.25',
      token_symbol: 'USDT',
      chain_id: SEPOLIA.chainId,
      status: 'pending_deposit',
      token: null,
      claim_url: first.claim_url,
      funding_tx_hash: null,
      funded_amount: null,
      idempotent_hit: true,
    });
    expect(await sepolia.balance('USDT', custody1)).toBe(afterFirst);
    await untilLinkSent(sb, first.claim_link_id);
    expect(await client.createClaimLinkAutoPayout(request)).toMatchObject({
      status: 'link_sent',
      idempotent_hit: true,
    });
  });

  it('behavior: the same amount written differently ("4.50" and "4.5") is a replay', async () => {
    const client = clientFor(sb, 'st_a');
    const reference_id = ref('same-amount');
    const first = await client.createClaimLinkAutoPayout({
      amount: '4.50',
      stable_coin: 1,
      chain: 11,
      reference_id,
    });
    const second = await client.createClaimLinkAutoPayout({
      amount: '4.5',
      stable_coin: 1,
      chain: 11,
      reference_id,
    });
    expect(second).toMatchObject({ claim_link_id: first.claim_link_id, idempotent_hit: true });
  });

  it.each([
    ['a different amount', { amount: '5.000001' }],
    ['a different coin', { stable_coin: 2 }],
    ['a different chain', { chain: BNB.serviceChain }],
  ])('error: the same reference_id with %s is 50106 (HTTP 409)', async (_name, change) => {
    const reference_id = ref('conflict');
    const original = await rawSigned(sb, 'st_a', CREATE_PATH, createBody({ amount: '5', reference_id }));
    expect(original.body.code).toBe(0);
    const before = await sepolia.balance('USDT', custody1);
    const res = await rawSigned(
      sb,
      'st_a',
      CREATE_PATH,
      createBody({ amount: '5', reference_id, ...change }),
    );
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 50106, payload: null });
    expect(await sepolia.balance('USDT', custody1)).toBe(before);
    await expect(
      clientFor(sb, 'st_a').createClaimLinkAutoPayout({
        amount: '5',
        stable_coin: 1,
        chain: 11,
        reference_id,
        ...change,
      } as Parameters<ReturnType<typeof clientFor>['createClaimLinkAutoPayout']>[0]),
    ).rejects.toMatchObject({ code: 50106, httpStatus: 409 });
  });

  it('behavior: other stores of the business, and other businesses, may reuse a reference_id', async () => {
    const reference_id = ref('shared');
    const request = { amount: '1.25', stable_coin: 1 as const, chain: 11 as const, reference_id };
    const a = await clientFor(sb, 'st_a').createClaimLinkAutoPayout(request);
    const b = await clientFor(sb, 'st_b').createClaimLinkAutoPayout(request);
    const c = await clientFor(sb, 'st_c').createClaimLinkAutoPayout(request);
    expect([a.idempotent_hit, b.idempotent_hit, c.idempotent_hit]).toEqual([false, false, false]);
    expect(new Set([a.claim_link_id, b.claim_link_id, c.claim_link_id]).size).toBe(3);
    // ...and the other store's different parameters are no conflict either.
    const d = await clientFor(sb, 'st_b').createClaimLinkAutoPayout({
      ...request,
      reference_id: ref('shared-b'),
    });
    expect(d.idempotent_hit).toBe(false);
  });

  it('behavior: concurrent creates with one reference_id fund once', async () => {
    const client = clientFor(sb, 'st_a');
    const request = { amount: '6', stable_coin: 1 as const, chain: 11 as const, reference_id: ref('race') };
    const before = await sepolia.balance('USDT', custody1);
    const results = await Promise.all([1, 2, 3, 4].map(() => client.createClaimLinkAutoPayout(request)));
    expect(new Set(results.map((r) => r.claim_link_id)).size).toBe(1);
    expect(results.filter((r) => !r.idempotent_hit)).toHaveLength(1);
    expect(results.filter((r) => r.token !== null)).toHaveLength(1);
    expect(await sepolia.balance('USDT', custody1)).toBe(before - 6_000_000n - FEE_6);
  });
});

describe('funding failures (50103)', () => {
  it('error: a custody balance short of amount + fee is 50103 with a reason and no reason_code', async () => {
    const custody2 = await sepolia.custody('biz_2');
    const balance = await sepolia.balance('USDC', custody2);
    const linksBefore = (await listLinks(sb)).length;
    // One base unit more than the custody wallet can pay, fee included.
    const short = balance - FEE_6 + 1n;
    const amountText = (units: bigint) =>
      `${units / 1_000_000n}.${(units % 1_000_000n).toString().padStart(6, '0')}`;
    const res = await rawSigned(
      sb,
      'st_c',
      CREATE_PATH,
      createBody({ amount: amountText(short), stable_coin: 2, reference_id: ref('short') }),
    );
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 50103, payload: null });
    expect(res.body.error?.details.reason).toEqual(expect.stringContaining('insufficient balance'));
    expect(res.body.error?.details).not.toHaveProperty('reason_code');
    expect(res.body.error?.details).not.toHaveProperty('plutus_code');
    expect(await sepolia.balance('USDC', custody2)).toBe(balance);
    expect((await listLinks(sb)).length).toBe(linksBefore);

    // The client does not retry it and says what to do.
    const err = await clientFor(sb, 'st_c', { maxAttempts: 3 })
      .createClaimLinkAutoPayout({
        amount: amountText(short),
        stable_coin: 2,
        chain: 11,
        reference_id: ref('short'),
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SvcApiError);
    expect(err).toMatchObject({ code: 50103, retryable: false });

    // Exactly amount + fee is enough: the wallet is emptied.
    const exact = await clientFor(sb, 'st_c').createClaimLinkAutoPayout({
      amount: amountText(balance - FEE_6),
      stable_coin: 2,
      chain: 11,
      reference_id: ref('exact'),
    });
    expect(exact.idempotent_hit).toBe(false);
    expect(await sepolia.balance('USDC', custody2)).toBe(0n);
    const view = await linkView(sb, exact.claim_link_id);
    expect(await sepolia.balance('USDC', view.pool_address)).toBe(balance - FEE_6);
  });

  it.each([
    ['signer_error', { reason_code: 'signer_error' }, { reason_code: 'signer_error' }],
    ['session_expired', { reason_code: 'session_expired' }, { reason_code: 'session_expired' }],
    ['policy_denied', { reason_code: 'policy_denied' }, { reason_code: 'policy_denied' }],
    ['plutus_code 8148', { plutus_code: 8148 }, { plutus_code: 8148 }],
    [
      'signer_error with plutus_code 8148 and a custom reason',
      { reason_code: 'signer_error', plutus_code: 8148, reason: 'HSM busy' },
      { reason_code: 'signer_error', plutus_code: 8148, reason: 'HSM busy' },
    ],
  ])(
    'error: injected %s is 50103 with its details; no money moves; a retry with the same reference_id funds',
    async (_name, fault, details) => {
      expect((await sb.control('/_sandbox/claim_links/fail_next', fault)).status).toBe(200);
      const before = await sepolia.balance('USDT', custody1);
      const body = createBody({ amount: '7', reference_id: ref('fault') });
      const res = await rawSigned(sb, 'st_a', CREATE_PATH, body);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        code: 50103,
        payload: null,
        error: { details: { reason: expect.any(String), ...details } },
      });
      expect(await sepolia.balance('USDT', custody1)).toBe(before);
      const retry = await rawSigned(sb, 'st_a', CREATE_PATH, body);
      expect(retry.body.payload).toMatchObject({ idempotent_hit: false, funded_amount: '7' });
      expect(await sepolia.balance('USDT', custody1)).toBe(before - 7_000_000n - FEE_6);
    },
  );

  it('behavior: the client retries signer_error with the same reference_id and funds once', async () => {
    await sb.control('/_sandbox/claim_links/fail_next', { reason_code: 'signer_error', count: 2 });
    const before = await sepolia.balance('USDT', custody1);
    const result = await clientFor(sb, 'st_a', { maxAttempts: 3 }).createClaimLinkAutoPayout({
      amount: '8',
      stable_coin: 1,
      chain: 11,
      reference_id: ref('retry'),
    });
    expect(result.idempotent_hit).toBe(false);
    expect(await sepolia.balance('USDT', custody1)).toBe(before - 8_000_000n - FEE_6);
  });

  it('behavior: the client retries plutus_code 8148 (no funds moved before broadcast)', async () => {
    await sb.control('/_sandbox/claim_links/fail_next', { plutus_code: 8148 });
    const result = await clientFor(sb, 'st_a', { maxAttempts: 2 }).createClaimLinkAutoPayout({
      amount: '8',
      stable_coin: 1,
      chain: 11,
      reference_id: ref('retry8148'),
    });
    expect(result.idempotent_hit).toBe(false);
  });

  it.each(['session_expired', 'policy_denied'])(
    'behavior: the client does not retry %s and names the action',
    async (reasonCode) => {
      await sb.control('/_sandbox/claim_links/fail_next', { reason_code: reasonCode });
      const err = await clientFor(sb, 'st_a', { maxAttempts: 3 })
        .createClaimLinkAutoPayout({ amount: '1', stable_coin: 1, chain: 11, reference_id: ref('noretry') })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 50103, retryable: false, action: expect.any(String) });
    },
  );

  it('behavior: an injected fault spares replays and hits the next funding create', async () => {
    const client = clientFor(sb, 'st_a');
    const request = { amount: '1', stable_coin: 1 as const, chain: 11 as const, reference_id: ref('spare') };
    await client.createClaimLinkAutoPayout(request);
    await sb.control('/_sandbox/claim_links/fail_next', { reason_code: 'policy_denied' });
    expect(await client.createClaimLinkAutoPayout(request)).toMatchObject({ idempotent_hit: true });
    await expect(
      client.createClaimLinkAutoPayout({ ...request, reference_id: ref('spare') }),
    ).rejects.toMatchObject({
      code: 50103,
      details: { reason_code: 'policy_denied' },
    });
  });

  it('error: fail_next validates its body', async () => {
    expect((await sb.control('/_sandbox/claim_links/fail_next', { count: 0 })).status).toBe(400);
    expect((await sb.control('/_sandbox/claim_links/fail_next', { plutus_code: 'x' })).status).toBe(400);
    expect((await sb.control('/_sandbox/claim_links/fail_next', { surprise: 1 })).status).toBe(400);
  });
});

describe('settings (control API)', () => {
  it('behavior: a bps funding fee is charged on top of the amount and kept by the service', async () => {
    const set = await sb.control('/_sandbox/claim_links/config', { funding_fee: { fixed: '0', bps: 100 } });
    expect(set.status).toBe(200);
    try {
      const before = await sepolia.balance('USDT', custody1);
      const result = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
        amount: '10.000001',
        stable_coin: 1,
        chain: 11,
        reference_id: ref('bps'),
      });
      // 1% of 10.000001, rounded up to a base unit: 0.100001.
      const view = await linkView(sb, result.claim_link_id);
      expect(view).toMatchObject({
        fee_amount: '0.100001',
        funding_total: '10.100002',
        funded_amount: '10.000001',
      });
      expect(await sepolia.balance('USDT', custody1)).toBe(before - 10_100_002n);
      expect(await sepolia.balance('USDT', view.pool_address)).toBe(10_000_001n);
    } finally {
      await sb.control('/_sandbox/claim_links/config', { funding_fee: { fixed: '0.5', bps: 0 } });
    }
  });

  it('error: config validates its body', async () => {
    expect((await sb.control('/_sandbox/claim_links/config', { scanner_delay_ms: -1 })).status).toBe(400);
    expect(
      (await sb.control('/_sandbox/claim_links/config', { funding_fee: { fixed: '0.0000001' } })).status,
    ).toBe(400);
    expect((await sb.control('/_sandbox/claim_links/config', { funding_fee: { bps: 10_001 } })).status).toBe(
      400,
    );
    expect((await sb.control('/_sandbox/claim_links/config', { unknown: 1 })).status).toBe(400);
    const current = await sb.control<{ funding_fee: { fixed: string; bps: number } }>(
      '/_sandbox/claim_links/config',
    );
    expect(current.body.funding_fee).toEqual({ fixed: '0.5', bps: 0 });
  });
});
