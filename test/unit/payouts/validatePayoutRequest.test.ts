import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import { resolveChain, validatePayoutRequest } from '../../../src/payouts/createPayout.ts';
import { PayoutInputError } from '../../../src/payouts/errors.ts';

const chains = createChainRegistry();
const base = { storeId: 'st_a', amount: '5.25', coin: 'USDT', chain: 'base', referenceId: 'ref-1' };

describe('validatePayoutRequest', () => {
  it('behavior: a chain name or EIP-155 id becomes the service Chain enum; the amount its canonical form', () => {
    const v = validatePayoutRequest(chains, { ...base, amount: '5.250' });
    expect(v).toMatchObject({ chainId: 8453, coin: 'USDT', amount: '5.25' });
    expect(v.api).toMatchObject({ amount: '5.25', stable_coin: 1, chain: 5, reference_id: 'ref-1' });
    expect(validatePayoutRequest(chains, { ...base, chain: 56, coin: 'usdc' }).api).toMatchObject({
      chain: 6,
      stable_coin: 2,
    });
    expect(resolveChain(chains, 'Sepolia')).toBe(11155111);
    expect(resolveChain(chains, '137')).toBe(137);
  });

  it('behavior: 18-decimal tokens on BNB take 18 decimals', () => {
    const v = validatePayoutRequest(chains, { ...base, chain: 'bnb', amount: '0.000000000000000001' });
    expect(v.amount).toBe('0.000000000000000001');
  });

  it('error: over-precise, zero, malformed amounts; unknown coin and chain; spec limits', () => {
    const bad = (patch: Record<string, unknown>, message: RegExp) =>
      expect(() => validatePayoutRequest(chains, { ...base, ...patch })).toThrow(message);
    bad({ amount: '5.1234567' }, /more precision than the token's 6 decimals \(USDT on chain 8453\)/);
    bad({ amount: '0' }, /must be greater than 0/);
    bad({ amount: '0.000' }, /must be greater than 0/);
    bad({ amount: '-1' }, /not a plain decimal string/);
    bad({ amount: '1e3' }, /not a plain decimal string/);
    bad({ coin: 'DAI' }, /coin DAI is not USDT or USDC/);
    bad({ chain: 'solana' }, /chain solana is not in the chain registry/);
    bad({ chain: 999 }, /chain 999 is not in the chain registry/);
    bad({ referenceId: 'has space' }, /reference_id must be 1 to 128 printable ASCII/);
    bad({ referenceId: '' }, /reference_id/);
    bad({ senderMessage: 'x'.repeat(501) }, /sender_message must be at most 500/);
    bad({ receiverEmail: 'x'.repeat(255) }, /receiver_email must be at most 254/);
    expect(() => validatePayoutRequest(chains, { ...base, amount: '1.1234567' })).toThrow(PayoutInputError);
  });

  it('error: a registry chain without a service Chain enum value cannot take claim links', () => {
    const custom = createChainRegistry([
      { chain_id: 31337, name: 'local', tokens: { USDT: { address: `0x${'11'.repeat(20)}`, decimals: 6 } } },
    ]);
    expect(() => validatePayoutRequest(custom, { ...base, chain: 'local' })).toThrow(
      /claim links: EIP-155 chain id 31337 has no service Chain enum value/,
    );
  });
});
