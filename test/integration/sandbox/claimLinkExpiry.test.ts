import { afterAll, describe, expect, it } from 'vitest';
import { startTestSandbox, testStore } from '../../helpers/sandboxHarness.ts';
import {
  advance,
  cancelPath,
  chainReader,
  clientFor,
  linkView,
  rawSigned,
  ref,
  SEPOLIA,
  startWebhookReceiver,
  untilLinkSent,
} from './claimLinkTestKit.ts';

/**
 * The 14-day expiry on the sandbox clock: a funded, unclaimed, uncancelled link expires 14 days
 * after funding, its principal goes back to the custody wallet by a real transfer, and no webhook
 * is sent. Claimed and cancelled links are left alone.
 */
const receiver = await startWebhookReceiver();
afterAll(() => receiver.close());
const storeA = testStore('st_a', { claim_link_webhook_url: receiver.url });
const sb = await startTestSandbox({
  chains: [SEPOLIA.chainId],
  config: {
    rate_limit: { requests_per_second: 10_000, burst: 10_000 },
    businesses: [{ business_id: 'biz_1', stores: [storeA] }],
  },
});
const sepolia = chainReader(sb, SEPOLIA.chainId);
const custody = await sepolia.custody('biz_1');
const FEE = 500_000n;
const DAY_S = 24 * 60 * 60;

const create = (amount: string) =>
  clientFor(sb, 'st_a').createClaimLinkAutoPayout({
    amount,
    stable_coin: 1,
    chain: 11,
    reference_id: ref('expiry'),
  });

describe('expiry', () => {
  it('behavior: an unclaimed link expires 14 days after funding with a refund to custody and no webhook', async () => {
    const start = await sepolia.balance('USDT', custody);
    const open = await create('40');
    const claimed = await create('5');
    const cancelled = await create('6');
    for (const link of [open, claimed, cancelled]) await untilLinkSent(sb, link.claim_link_id);
    await sb.control(`/_sandbox/claim_links/${claimed.claim_link_id}/claim`, {});
    await clientFor(sb, 'st_a').cancelClaimLinkAutoPayout(cancelled.claim_link_id);
    await advance(sb, 6); // the cancel's refund
    const afterSetup = await sepolia.balance('USDT', custody);
    expect(afterSetup).toBe(start - 40_000_000n - 5_000_000n - 3n * FEE);
    const hooksBefore = receiver.received.length;
    const deliveriesBefore = sb.world.webhooks.list().length;

    const view = await linkView(sb, open.claim_link_id);
    const fundedAt = new Date(view.funded_at).getTime();
    expect(new Date(view.expires_at).getTime() - fundedAt).toBe(14 * DAY_S * 1000);

    // Two seconds short of 14 days: still open.
    const now = () => sb.world.clock.now().getTime();
    await advance(sb, (fundedAt + 14 * DAY_S * 1000 - 2000 - now()) / 1000);
    expect((await linkView(sb, open.claim_link_id)).status).toBe('link_sent');
    expect(await sepolia.balance('USDT', custody)).toBe(afterSetup);

    // 14 days and 1 second after funding: expired and refunded (advance returns once timers ran).
    await advance(sb, (fundedAt + 14 * DAY_S * 1000 + 1000 - now()) / 1000);
    const expired = await linkView(sb, open.claim_link_id);
    expect(expired).toMatchObject({ status: 'expired', refund_status: 'refunded', refund_amount: '40' });
    expect(await sepolia.balance('USDT', expired.pool_address)).toBe(0n);
    expect(await sepolia.balance('USDT', custody)).toBe(afterSetup + 40_000_000n);
    expect(await sepolia.transfers(expired.refund_tx_hash!)).toEqual([
      { token: sepolia.token('USDT'), from: expired.pool_address, to: custody, value: 40_000_000n },
    ]);

    // No webhook for an expiry.
    await new Promise((r) => setTimeout(r, 300));
    expect(expired.webhook_id).toBeNull();
    expect(receiver.received.slice(hooksBefore)).toEqual([]);
    expect(sb.world.webhooks.list().length).toBe(deliveriesBefore);

    // Claimed and cancelled links are untouched by the expiry.
    expect((await linkView(sb, claimed.claim_link_id)).status).toBe('claimed');
    expect((await linkView(sb, cancelled.claim_link_id)).status).toBe('cancelled');

    // Over the whole story the custody wallet paid the fees and the claimed amount only.
    expect(await sepolia.balance('USDT', custody)).toBe(start - 5_000_000n - 3n * FEE);
  });

  it('error: an expired link is not cancellable (50108 with details.status "expired")', async () => {
    const link = await create('2');
    await untilLinkSent(sb, link.claim_link_id);
    await advance(sb, 14 * DAY_S + 1);
    const res = await rawSigned(sb, 'st_a', cancelPath(link.claim_link_id), '');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 50108, error: { details: { status: 'expired' } } });
    expect(res.body.error?.details.reason).toEqual(expect.stringMatching(/\S/));
  });

  it('behavior: a replay of an expired link shows it expired', async () => {
    const reference_id = ref('expired-replay');
    const client = clientFor(sb, 'st_a');
    const first = await client.createClaimLinkAutoPayout({
      amount: '1',
      stable_coin: 1,
      chain: 11,
      reference_id,
    });
    await advance(sb, 14 * DAY_S + 1);
    expect(
      await client.createClaimLinkAutoPayout({ amount: '1', stable_coin: 1, chain: 11, reference_id }),
    ).toMatchObject({
      claim_link_id: first.claim_link_id,
      status: 'expired',
      idempotent_hit: true,
    });
    const html = await (await fetch(first.claim_url!)).text();
    expect(html).toContain('data-status="expired"');
  });
});
