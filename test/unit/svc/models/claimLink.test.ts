import { describe, expect, it } from 'vitest';
import {
  cancelClaimLinkResultSchema,
  claimLinkCancelledWebhookPayloadSchema,
  createClaimLinkRequestSchema,
  createClaimLinkResultSchema,
} from '../../../../src/svc/models/claimLink.ts';
import { notCancellableDetailsSchema } from '../../../../src/svc/models/errorDetails.ts';

const request = {
  amount: '25.50',
  stable_coin: 1,
  chain: 5,
  receiver_email: 'recipient@example.com',
  sender_display_name: 'Acme Ltd',
  sender_message: 'Refund for order ord_2024_00017',
  reference_id: 'refund:ord_2024_00017:1',
};

const fundingHash = '0xb1f4c3d2e1a0f9e8d7c6b5a4938271605f4e3d2c1b0a99887766554433221100';

const createdResult = {
  claim_link_id: '6660a1f09b1d4a0012ab3600',
  reference_id: 'refund:ord_2024_00017:1',
  amount: '25.5',
  token_symbol: 'USDT',
  chain_id: 8453,
  status: 'pending_deposit',
  token: 'clt_3J9xQ2vL8mN4pR7s',
  claim_url: 'https://claim.svc.example/c/clt_3J9xQ2vL8mN4pR7s',
  funding_tx_hash: fundingHash,
  funded_amount: '25.5',
  idempotent_hit: false,
};

describe('create claim link request', () => {
  it('behavior: full request', () => {
    expect(createClaimLinkRequestSchema.parse(request)).toEqual(request);
  });

  it('behavior: optional texts absent or null', () => {
    const minimal = { amount: '1', stable_coin: 2, chain: 6, reference_id: 'p-1' };
    expect(createClaimLinkRequestSchema.parse(minimal)).toEqual(minimal);
    expect(
      createClaimLinkRequestSchema.parse({ ...minimal, receiver_email: null }).receiver_email,
    ).toBeNull();
  });

  it('behavior: limits are inclusive', () => {
    const atLimits = {
      ...request,
      receiver_email: `${'a'.repeat(242)}@example.com`,
      sender_display_name: 'n'.repeat(100),
      sender_message: 'm'.repeat(500),
      reference_id: '~'.repeat(128),
    };
    expect(atLimits.receiver_email).toHaveLength(254);
    expect(createClaimLinkRequestSchema.safeParse(atLimits).success).toBe(true);
  });

  it('behavior: Sepolia passes the schema (the environment decides)', () => {
    expect(createClaimLinkRequestSchema.parse({ ...request, chain: 11 }).chain).toBe(11);
  });

  it.each([
    ['amount as JSON number', { amount: 25.5 }],
    ['amount zero', { amount: '0.000' }],
    ['amount negative', { amount: '-1' }],
    ['amount exponent', { amount: '1e2' }],
    ['stable_coin 3', { stable_coin: 3 }],
    ['stable_coin as symbol', { stable_coin: 'USDT' }],
    ['chain as EIP-155 id', { chain: 8453 }],
    ['chain 2', { chain: 2 }],
    ['chain as string', { chain: '5' }],
    ['receiver_email too long', { receiver_email: `${'a'.repeat(243)}@example.com` }],
    ['sender_display_name too long', { sender_display_name: 'n'.repeat(101) }],
    ['sender_message too long', { sender_message: 'm'.repeat(501) }],
    ['reference_id empty', { reference_id: '' }],
    ['reference_id too long', { reference_id: 'r'.repeat(129) }],
    ['reference_id with space', { reference_id: 'ref 1' }],
    ['reference_id with tab', { reference_id: 'ref\t1' }],
    ['reference_id with DEL', { reference_id: 'ref\u007f' }],
    ['reference_id non-ASCII', { reference_id: 'réf' }],
    ['reference_id missing', { reference_id: undefined }],
  ])('error: %s', (_case, patch) => {
    expect(createClaimLinkRequestSchema.safeParse({ ...request, ...patch }).success).toBe(false);
  });
});

describe('create claim link result', () => {
  it('behavior: first call funds the link', () => {
    const result = createClaimLinkResultSchema.parse(createdResult);
    expect(result).toEqual(createdResult);
  });

  it('behavior: idempotent replay nulls the secret and funding fields', () => {
    const replay = createClaimLinkResultSchema.parse({
      ...createdResult,
      status: 'link_sent',
      token: null,
      funding_tx_hash: null,
      funded_amount: null,
      idempotent_hit: true,
    });
    expect(replay).toMatchObject({
      token: null,
      funding_tx_hash: null,
      funded_amount: null,
      idempotent_hit: true,
    });
  });

  it.each([
    ['amount as JSON number', { amount: 25.5 }],
    ['funded_amount as JSON number', { funded_amount: 25.5 }],
    ['unknown status', { status: 'funded' }],
    ['idempotent_hit as string', { idempotent_hit: 'false' }],
    ['funding hash too short', { funding_tx_hash: '0x1234' }],
    ['token missing', { token: undefined }],
  ])('error: %s', (_case, patch) => {
    expect(createClaimLinkResultSchema.safeParse({ ...createdResult, ...patch }).success).toBe(false);
  });
});

describe('cancel claim link', () => {
  const cancelled = {
    claim_link_id: '6660a1f09b1d4a0012ab3600',
    reference_id: null,
    status: 'cancelled',
    refund_status: 'refund_pending',
  };

  it('behavior: result', () => {
    expect(cancelClaimLinkResultSchema.parse(cancelled)).toEqual(cancelled);
  });

  it.each([{ status: 'link_sent' }, { refund_status: 'refunded' }])('error: rejects %j', (patch) => {
    expect(cancelClaimLinkResultSchema.safeParse({ ...cancelled, ...patch }).success).toBe(false);
  });

  it('behavior: the 50108 details of a repeat', () => {
    expect(
      notCancellableDetailsSchema.parse({ status: 'cancelled', reason: 'already cancelled' }).status,
    ).toBe('cancelled');
  });
});

describe('claim-link cancelled webhook', () => {
  it('behavior: refund_tx_hash required, unknown fields kept', () => {
    const body = {
      event: 'cancelled',
      claim_link_id: '6660a1f09b1d4a0012ab3600',
      refund_tx_hash: fundingHash,
      refunded_amount: '25.4',
    };
    expect(claimLinkCancelledWebhookPayloadSchema.parse(body)).toEqual(body);
  });

  it.each([{}, { refund_tx_hash: null }, { refund_tx_hash: 'pending' }])('error: rejects %j', (body) => {
    expect(claimLinkCancelledWebhookPayloadSchema.safeParse(body).success).toBe(false);
  });
});
