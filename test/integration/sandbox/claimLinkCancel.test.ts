import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { ClaimLinkView } from '../../../src/sandbox/claimLinks/claimLinkEngine.ts';
import { startTestSandbox, testStore } from '../../helpers/sandboxHarness.ts';
import {
  advance,
  cancelPath,
  chainReader,
  clientFor,
  eventually,
  linkView,
  rawSigned,
  ref,
  SEPOLIA,
  startWebhookReceiver,
  untilLinkSent,
} from './claimLinkTestKit.ts';

/**
 * Conformance of POST /v1/claim_link_auto_payouts/{id}/cancel (50107, 50108 per state, the cancel
 * result, the asynchronous refund and the cancelled webhook) and of claiming through the control
 * API, with the chain checked against every amount the API reports.
 */
const receiver = await startWebhookReceiver();
afterAll(() => receiver.close());
const storeA = testStore('st_a', { claim_link_webhook_url: receiver.url });
const sb = await startTestSandbox({
  chains: [SEPOLIA.chainId],
  config: {
    rate_limit: { requests_per_second: 10_000, burst: 10_000 },
    businesses: [
      { business_id: 'biz_1', stores: [storeA, testStore('st_b')] },
      { business_id: 'biz_2', stores: [testStore('st_c')] },
    ],
  },
});
const sepolia = chainReader(sb, SEPOLIA.chainId);
const custody1 = await sepolia.custody('biz_1');
const FEE = 500_000n;

/** A funded link of st_a in link_sent. */
async function sentLink(amount = '10', storeId = 'st_a') {
  const created = await clientFor(sb, storeId).createClaimLinkAutoPayout({
    amount,
    stable_coin: 1,
    chain: 11,
    reference_id: ref('cancel'),
  });
  await untilLinkSent(sb, created.claim_link_id);
  return created;
}

describe('not found (50107)', () => {
  it("error: unknown, malformed and another business's ids get identical 50107 answers", async () => {
    const link = await sentLink();
    const ids: Array<[string, string, string]> = [
      ['unknown well-formed id', 'st_a', `cl_${randomBytes(12).toString('hex')}`],
      ['malformed id', 'st_a', 'not-a-claim-link'],
      ['malformed id with the prefix', 'st_a', 'cl_XYZ'],
      ['id with trailing characters', 'st_a', `${link.claim_link_id}0`],
      ['id in upper case', 'st_a', link.claim_link_id.toUpperCase()],
      ['very long id', 'st_a', 'c'.repeat(300)],
      ['percent-encoded junk', 'st_a', '%E2%82%AC%20x'],
      ['an encoded slash', 'st_a', 'a%2Fb'],
      ['empty id', 'st_a', ''],
      ["another business's link", 'st_c', link.claim_link_id],
    ];
    const answers = [];
    for (const [name, storeId, id] of ids) {
      const res = await rawSigned(sb, storeId, cancelPath(id), '');
      answers.push({
        name,
        status: res.status,
        code: res.body.code,
        payload: res.body.payload,
        error: res.body.error,
      });
    }
    for (const answer of answers) {
      expect(answer, answer.name).toEqual({
        name: answer.name,
        status: 404,
        code: 50107,
        payload: null,
        error: answers[0]?.error,
      });
    }
    await expect(clientFor(sb, 'st_c').cancelClaimLinkAutoPayout(link.claim_link_id)).rejects.toMatchObject({
      code: 50107,
      httpStatus: 404,
    });
    // Nothing happened to the link.
    expect((await linkView(sb, link.claim_link_id)).status).toBe('link_sent');
  });
});

describe('not cancellable (50108)', () => {
  const states: Array<[string, () => Promise<string>]> = [
    [
      'pending_deposit',
      async () =>
        (
          await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
            amount: '1',
            stable_coin: 1,
            chain: 11,
            reference_id: ref('pending'),
          })
        ).claim_link_id,
    ],
    [
      'claiming',
      async () => {
        const link = await sentLink('1');
        await sb.control(`/_sandbox/claim_links/${link.claim_link_id}/claim`, { stop_at: 'claiming' });
        return link.claim_link_id;
      },
    ],
    [
      'claimed',
      async () => {
        const link = await sentLink('1');
        await sb.control(`/_sandbox/claim_links/${link.claim_link_id}/claim`, {});
        return link.claim_link_id;
      },
    ],
    [
      'cancelled',
      async () => {
        const link = await sentLink('1');
        await clientFor(sb, 'st_a').cancelClaimLinkAutoPayout(link.claim_link_id);
        return link.claim_link_id;
      },
    ],
  ];

  it.each(states)(
    'error: a %s link is 50108 (HTTP 409) with details.status and details.reason',
    async (state, make) => {
      const id = await make();
      const res = await rawSigned(sb, 'st_a', cancelPath(id), '');
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 50108, payload: null });
      expect(res.body.error?.details).toEqual({ status: state, reason: expect.stringMatching(/\S/) });
      expect((await linkView(sb, id)).status).toBe(state);
    },
  );

  it('behavior: a repeated cancel answers 50108 "cancelled", which the client reports as already done', async () => {
    const link = await sentLink('1');
    const client = clientFor(sb, 'st_a');
    expect(await client.cancelClaimLinkAutoPayout(link.claim_link_id)).toMatchObject({
      already_cancelled: false,
    });
    expect(await client.cancelClaimLinkAutoPayout(link.claim_link_id)).toEqual({
      claim_link_id: link.claim_link_id,
      status: 'cancelled',
      already_cancelled: true,
    });
  });
});

describe('cancel', () => {
  it('error: cancel takes no body (10001)', async () => {
    const link = await sentLink('1');
    const res = await rawSigned(sb, 'st_a', cancelPath(link.claim_link_id), '{}');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 10001, error: { details: { field: 'body' } } });
    expect((await linkView(sb, link.claim_link_id)).status).toBe('link_sent');
  });

  it('behavior: cancel, refund to the custody wallet, then the signed cancelled webhook; the chain agrees', async () => {
    await advance(sb, 6); // settles the refunds earlier tests left pending, so custody moves only for this link
    const before = await sepolia.balance('USDT', custody1);
    const link = await sentLink('25.5');
    const amount = 25_500_000n;
    const funded = await linkView(sb, link.claim_link_id);
    const pool = funded.pool_address;
    expect(await sepolia.balance('USDT', custody1)).toBe(before - amount - FEE);
    expect(await sepolia.balance('USDT', pool)).toBe(amount);

    const result = await clientFor(sb, 'st_a').cancelClaimLinkAutoPayout(link.claim_link_id);
    expect(result).toEqual({
      claim_link_id: link.claim_link_id,
      reference_id: link.reference_id,
      status: 'cancelled',
      refund_status: 'refund_pending',
      already_cancelled: false,
    });
    // The refund is asynchronous: nothing has moved yet.
    const pending = await linkView(sb, link.claim_link_id);
    expect(pending).toMatchObject({
      status: 'cancelled',
      refund_status: 'refund_pending',
      refund_tx_hash: null,
    });
    expect(await sepolia.balance('USDT', pool)).toBe(amount);
    const hooksBefore = receiver.received.length;

    await advance(sb, 6);
    const refunded = await eventually(async () => {
      const v = await linkView(sb, link.claim_link_id);
      return v.refund_status === 'refunded' ? v : undefined;
    });
    expect(refunded).toMatchObject({ status: 'cancelled', refund_amount: '25.5' });
    // Principal back to the business wallet; the fee settled at funding is not refunded.
    expect(await sepolia.balance('USDT', pool)).toBe(0n);
    expect(await sepolia.balance('USDT', custody1)).toBe(before - FEE);
    expect(await sepolia.transfers(refunded.refund_tx_hash!)).toEqual([
      { token: sepolia.token('USDT'), from: pool, to: custody1, value: amount },
    ]);

    const hook = await eventually(async () =>
      receiver.received
        .slice(hooksBefore)
        .find((h) => (JSON.parse(h.body) as { claim_link_id?: string }).claim_link_id === link.claim_link_id),
    );
    expect(JSON.parse(hook.body)).toEqual({
      event: 'cancelled',
      claim_link_id: link.claim_link_id,
      reference_id: link.reference_id,
      refund_tx_hash: refunded.refund_tx_hash,
      refund_amount: '25.5',
      chain_id: SEPOLIA.chainId,
      token_symbol: 'USDT',
    });
    expect(hook.path).toBe('/hooks/claim-links?tenant=t1');
    expect(hook.headers['x-api-key']).toBe(storeA.api_key);
    expect(hook.headers['x-webhook-id']).toBe(refunded.webhook_id);
    expect(receiver.verify(hook, storeA.api_secret as string)).toBe(true);
    expect(receiver.verify(hook, 'another-secret-0123456789')).toBe(false);
    const skew = Number(hook.headers['x-webhook-timestamp']) - sb.world.clock.now().getTime() / 1000;
    expect(Math.abs(skew)).toBeLessThan(300);
  });

  it('behavior: an overpayment into the pool is refunded with the principal', async () => {
    await advance(sb, 6);
    const link = await sentLink('4');
    const view = await linkView(sb, link.claim_link_id);
    const chain = sb.world.chains.get(SEPOLIA.chainId)!;
    await chain.mint('USDT', view.pool_address, 250_000n); // 0.25 more than the link holds
    const before = await sepolia.balance('USDT', custody1);
    await clientFor(sb, 'st_a').cancelClaimLinkAutoPayout(link.claim_link_id);
    await advance(sb, 6);
    const refunded = await eventually(async () => {
      const v = await linkView(sb, link.claim_link_id);
      return v.refund_status === 'refunded' ? v : undefined;
    });
    expect(refunded.refund_amount).toBe('4.25');
    expect(await sepolia.balance('USDT', custody1)).toBe(before + 4_250_000n);
    expect(await sepolia.balance('USDT', view.pool_address)).toBe(0n);
    const hook = await eventually(async () =>
      receiver.received.find(
        (h) => (JSON.parse(h.body) as { claim_link_id?: string }).claim_link_id === link.claim_link_id,
      ),
    );
    expect(JSON.parse(hook.body)).toMatchObject({
      refund_amount: '4.25',
      refund_tx_hash: refunded.refund_tx_hash,
    });
  });

  it('behavior: another store of the same business may cancel (ownership is per business); the webhook goes to the creating store', async () => {
    const link = await sentLink('2');
    expect(await clientFor(sb, 'st_b').cancelClaimLinkAutoPayout(link.claim_link_id)).toMatchObject({
      status: 'cancelled',
    });
    await advance(sb, 6);
    const hook = await eventually(async () =>
      receiver.received.find(
        (h) => (JSON.parse(h.body) as { claim_link_id?: string }).claim_link_id === link.claim_link_id,
      ),
    );
    expect(receiver.verify(hook, storeA.api_secret as string)).toBe(true);
  });

  it('behavior: a store without claim_link_webhook_url gets its refund and no webhook', async () => {
    const link = await sentLink('3', 'st_b');
    await clientFor(sb, 'st_b').cancelClaimLinkAutoPayout(link.claim_link_id);
    await advance(sb, 6);
    const view = await eventually(async () => {
      const v = await linkView(sb, link.claim_link_id);
      return v.refund_status === 'refunded' ? v : undefined;
    });
    expect(view.webhook_id).toBeNull();
    expect(sb.world.webhooks.list().filter((d) => d.body.includes(link.claim_link_id))).toEqual([]);
  });

  it('behavior: the claim page of a cancelled link says so', async () => {
    const link = await sentLink('1');
    await clientFor(sb, 'st_a').cancelClaimLinkAutoPayout(link.claim_link_id);
    const html = await (await fetch(link.claim_url!)).text();
    expect(html).toContain('data-status="cancelled"');
  });
});

describe('claim (control API)', () => {
  it('behavior: link_sent -> claimed with a transfer pool -> recipient of the amount; the chain agrees', async () => {
    const link = await sentLink('7.123456');
    const amount = 7_123_456n;
    const custodyBefore = await sepolia.balance('USDT', custody1);
    const res = await sb.control<ClaimLinkView>(`/_sandbox/claim_links/${link.claim_link_id}/claim`, {});
    expect(res.status).toBe(200);
    const view = res.body;
    expect(view).toMatchObject({
      status: 'claimed',
      recipient: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
    });
    const recipient = view.recipient!;
    expect(await sepolia.balance('USDT', recipient)).toBe(amount);
    expect(await sepolia.balance('USDT', view.pool_address)).toBe(0n);
    expect(await sepolia.balance('USDT', custody1)).toBe(custodyBefore);
    expect(await sepolia.transfers(view.claim_tx_hash!)).toEqual([
      { token: sepolia.token('USDT'), from: view.pool_address, to: recipient, value: amount },
    ]);
    const html = await (await fetch(link.claim_url!)).text();
    expect(html).toContain('data-status="claimed"');
  });

  it('behavior: a claim to a given address, through claiming first', async () => {
    const link = await sentLink('1.5');
    const recipient = '0x00000000000000000000000000000000000c1a11';
    const held = await sb.control<ClaimLinkView>(`/_sandbox/claim_links/${link.claim_link_id}/claim`, {
      recipient,
      stop_at: 'claiming',
    });
    expect(held.body).toMatchObject({ status: 'claiming', claim_tx_hash: null });
    expect(await sepolia.balance('USDT', recipient)).toBe(0n);
    const done = await sb.control<ClaimLinkView>(`/_sandbox/claim_links/${link.claim_link_id}/claim`, {});
    expect(done.body).toMatchObject({ status: 'claimed' });
    expect(done.body.recipient?.toLowerCase()).toBe(recipient);
    expect(await sepolia.balance('USDT', recipient)).toBe(1_500_000n);
  });

  it.each([
    ['unknown link', async () => 'cl_000000000000000000000000', {}, 404],
    [
      'pending_deposit link',
      async () =>
        (
          await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
            amount: '1',
            stable_coin: 1,
            chain: 11,
            reference_id: ref('early'),
          })
        ).claim_link_id,
      {},
      409,
    ],
    [
      'claimed link',
      async () => {
        const link = await sentLink('1');
        await sb.control(`/_sandbox/claim_links/${link.claim_link_id}/claim`, {});
        return link.claim_link_id;
      },
      {},
      409,
    ],
    ['bad recipient', async () => (await sentLink('1')).claim_link_id, { recipient: '0x1234' }, 400],
  ])('error: claim of %s', async (_name, make, body, status) => {
    const id = await make();
    const res = await sb.control<{ error: string }>(`/_sandbox/claim_links/${id}/claim`, body);
    expect(res.status).toBe(status);
    expect(res.body.error).toEqual(expect.any(String));
  });
});
