import { describe, expect, it } from 'vitest';
import { startTestSandbox, testStore } from '../../helpers/sandboxHarness.ts';
import {
  BNB,
  CREATE_PATH,
  cancelPath,
  chainReader,
  clientFor,
  createBody,
  linkView,
  rawSigned,
  ref,
  SEPOLIA,
  untilLinkSent,
} from './claimLinkTestKit.ts';

/**
 * The environment's part in the claim-link rules: Sepolia (11) only on test environments, and the
 * live-signing flag, which create needs (50104) and cancel does not. This sandbox plays the
 * production environment.
 */
const sb = await startTestSandbox({
  chains: [SEPOLIA.chainId, BNB.chainId],
  config: {
    environment: 'production',
    live_signing_enabled: true,
    rate_limit: { requests_per_second: 10_000, burst: 10_000 },
    businesses: [{ business_id: 'biz_1', stores: [testStore('st_a')] }],
  },
});
const bnb = chainReader(sb, BNB.chainId);

describe('production environment', () => {
  it('error: Sepolia (11) is refused outside test environments (10001), even though it is simulated', async () => {
    const res = await rawSigned(sb, 'st_a', CREATE_PATH, createBody({ chain: SEPOLIA.serviceChain }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 10001, error: { details: { field: 'chain' } } });
    await expect(
      clientFor(sb, 'st_a').createClaimLinkAutoPayout({
        amount: '1',
        stable_coin: 1,
        chain: 11,
        reference_id: ref(),
      }),
    ).rejects.toMatchObject({ code: 10001, httpStatus: 400 });
  });

  it('behavior: BNB (6) is accepted and funded; the chain agrees', async () => {
    const custody = await bnb.custody('biz_1');
    const before = await bnb.balance('USDT', custody);
    const result = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
      amount: '100.25',
      stable_coin: 1,
      chain: BNB.serviceChain,
      reference_id: ref('prod'),
    });
    expect(result).toMatchObject({ chain_id: 56, funded_amount: '100.25', idempotent_hit: false });
    const view = await linkView(sb, result.claim_link_id);
    const amount = 100_250_000_000_000_000_000n;
    const fee = 500_000_000_000_000_000n;
    expect(await bnb.balance('USDT', custody)).toBe(before - amount - fee);
    expect(await bnb.balance('USDT', view.pool_address)).toBe(amount);
  });
});

describe('live signing disabled', () => {
  it('error: create is 50104 (HTTP 403) when live signing is off; cancel still works', async () => {
    const link = await clientFor(sb, 'st_a').createClaimLinkAutoPayout({
      amount: '3',
      stable_coin: 1,
      chain: BNB.serviceChain,
      reference_id: ref('live'),
    });
    await untilLinkSent(sb, link.claim_link_id);
    // The flag is the environment's and can change while the service runs (it is read per request).
    sb.world.config.live_signing_enabled = false;
    try {
      const res = await rawSigned(sb, 'st_a', CREATE_PATH, createBody({ chain: BNB.serviceChain }));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 50104, payload: null });
      // Checked before the body: even a broken body answers 50104.
      expect((await rawSigned(sb, 'st_a', CREATE_PATH, '{')).body.code).toBe(50104);
      // A replay of an existing link is refused too: the prerequisites come first.
      await expect(
        clientFor(sb, 'st_a').createClaimLinkAutoPayout({
          amount: '3',
          stable_coin: 1,
          chain: BNB.serviceChain,
          reference_id: link.reference_id!,
        }),
      ).rejects.toMatchObject({ code: 50104, httpStatus: 403 });
      const cancel = await rawSigned(sb, 'st_a', cancelPath(link.claim_link_id), '');
      expect(cancel.status).toBe(200);
      expect(cancel.body.payload).toEqual({
        claim_link_id: link.claim_link_id,
        reference_id: link.reference_id,
        status: 'cancelled',
        refund_status: 'refund_pending',
      });
    } finally {
      sb.world.config.live_signing_enabled = true;
    }
  });
});
