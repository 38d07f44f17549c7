import { createHash } from 'node:crypto';
import { formatDecimalAmount } from '../src/money/decimalAmount.ts';
import type { SvcClient } from '../src/svc/client.ts';
import { SvcApiError, SvcRateLimitError, SvcTransportError } from '../src/svc/errors.ts';
import { type CheckoutIntent, checkoutIntentSchema } from '../src/svc/models/checkoutIntent.ts';
import { CheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import type { SimTransfer } from './chainDouble.ts';
import type { SvcCallFault } from './schedule.ts';
import type { SimIntent, SimPayout, World } from './world.ts';

/**
 * The service as the world says it behaves, behind the product's own SvcClient interface: an
 * intent read at time t answers its state at t minus the read's lag (a read side lagging behind),
 * or a 5xx the caller retries. Any call may also be refused (90000, 40001) or act and lose its
 * answer, as its job's faults say (SvcCallFault). Amounts are written as the service may write
 * them (decimal_forms) and intents may be priced in fiat (fiat_priced). Answers go through the
 * service model's zod schema, as the real client's do. Only the calls the booking code makes are
 * answered.
 */
export interface ReadFaults {
  /** How far behind the world this read is (ms). */
  lagMs: number;
  /** The read fails: a gateway's 5xx or 429 (both retryable). */
  fail: false | '5xx' | '429';
}

export interface ServiceDouble {
  /** The world's claim-link events the service itself performs: a recipient claims, 14 days pass. */
  claim(referenceId: string): void;
  /** The service's clock reaches `now`: every link unclaimed 14 days after its funding expires and is refunded. */
  advance(now: number): void;
  /** A link's status at the service, or undefined when it was never created. */
  linkStatus(referenceId: string): LinkState['status'] | undefined;
  /** A reorg dropped one of the service's transfers: a link's funding is sent again (funding_resent). */
  transferDropped(txHash: string): void;
  /**
   * `call` says what the service does with each call the client makes (sim/schedule.ts,
   * SvcCallFault), asked once per call, after the read faults of a poll.
   */
  client(
    storeId: string,
    now: () => number,
    faults: () => ReadFaults,
    call?: (endpoint: string) => SvcCallFault,
  ): SvcClient;
  /** The body of the webhook the service sends about an intent at time t (its state then), as JSON. */
  webhookAt(intent: SimIntent, t: number, webhookId: string): Record<string, unknown> | null;
  /** The intent's state at time t, or undefined before it exists. */
  stateAt(intent: SimIntent, t: number): CheckoutIntent | undefined;
  /**
   * The claim-link webhooks due by the service's clock, each taken once: a cancelled link's
   * `cancelled` webhook, a minute after the refund piece that makes the refund whole (none for a
   * refund that never completes, an expiry or a refund after a claim).
   */
  takeClaimLinkWebhooks(): ClaimLinkWebhook[];
}

/** A claim-link webhook the service sends to a store's claim_link_webhook_url. */
export interface ClaimLinkWebhook {
  storeId: string;
  webhookId: string;
  body: Record<string, unknown>;
}

/** How long after the refund's last piece the service sends the cancelled webhook. */
const CANCELLED_WEBHOOK_DELAY_MS = 60_000;

/** A link's state at the service. */
interface LinkState {
  status: 'link_sent' | 'claimed' | 'cancelled' | 'expired';
  /** When the service funded it (ms): its 14 days run from here. */
  fundedAt: number;
}

/**
 * A decimal string of `units` as the service may write it (decimal_forms): canonical, fixed at
 * the token's decimals ("10.500000"), padded with 1 to 3 zeros beyond them ("10.500000000"), or
 * with one trailing zero ("10.50", "10.0"). Which one is a hash of `key`, so the same read in the
 * same replay writes the same text, and no random stream is drawn.
 */
export function decimalForm(units: bigint, decimals: number, key: string): string {
  const canonical = formatDecimalAmount(units, decimals);
  const h = createHash('sha256').update(key).digest();
  const [whole, fraction = ''] = canonical.split('.');
  switch ((h[0] ?? 0) % 4) {
    case 0:
      return canonical;
    case 1:
      return decimals === 0 ? canonical : `${whole}.${fraction.padEnd(decimals, '0')}`;
    case 2:
      return `${whole}.${fraction.padEnd(decimals + 1 + ((h[1] ?? 0) % 3), '0')}`;
    default:
      return fraction === '' ? `${canonical}.0` : `${canonical}0`;
  }
}

/** What the service answers instead, for a planned fault that stops it before it acts. */
function refusal(endpoint: string, fault: '5xx' | '429'): SvcApiError {
  return fault === '5xx'
    ? new SvcApiError({
        endpoint,
        code: 90000,
        httpStatus: 500,
        message: 'internal server error',
        details: {},
        requestId: undefined,
        retryable: true,
      })
    : new SvcApiError({
        endpoint,
        code: 40001,
        httpStatus: 429,
        message: 'rate limit exceeded',
        details: { retry_after: '1s' },
        requestId: undefined,
        retryable: true,
        retryAfterMs: 1_000,
      });
}

/** The answer never arrived (the service may have acted): what the client throws after its timeout. */
function lostAnswer(endpoint: string): SvcTransportError {
  return new SvcTransportError(endpoint, true, 'no response within 15000 ms (simulated: the service acted)');
}

/**
 * `send` puts the service's own transfers on the chain: a link's funding and fee sweep when it is
 * created, its claim, its refund on cancel or expiry; `settle` mines a block of the payout's chain
 * (a funding is mined before the create call answers).
 */
/** Claim links expire 14 days after their funding. */
const EXPIRY_MS = 14 * 86_400_000;

export function createServiceDouble(
  world: World,
  send: (t: SimTransfer) => void,
  settle: (chainId: number) => void,
): ServiceDouble {
  const byId = new Map(world.intents.map((i) => [i.id, i]));
  const merchantOf = new Map(world.stores.map((s) => [s.storeId, s.merchant]));

  const stateAt = (intent: SimIntent, t: number): CheckoutIntent | undefined => {
    const states = intent.timeline.filter((s) => s.at <= t);
    const now = states[states.length - 1];
    if (!now) return undefined;
    const paid = states.some((s) => s.status === CheckoutStatus.ON_CHAIN);
    const confirmed = now.status === CheckoutStatus.CONFIRMED;
    const decided = confirmed || now.status === CheckoutStatus.UNDERPAID;
    const d = intent.token.decimals;
    const form = intent.decimalForms
      ? (units: bigint, field: string) => decimalForm(units, d, `${intent.id}:${t}:${field}`)
      : undefined;
    const fmt = (units: bigint, field: string) => (form ? form(units, field) : formatDecimalAmount(units, d));
    const fiat = intent.fiat;
    return checkoutIntentSchema.parse({
      all_svc_checkout_intent_id: intent.id,
      currency: fiat?.currency ?? null,
      currency_symbol: fiat?.symbol ?? null,
      amount_cents: fiat ? Number(fiat.cents) : null,
      chain_id: intent.token.chainId,
      amount_coins: fmt(intent.R, 'amount_coins'),
      coin_symbol: intent.token.symbol,
      coin_contract: intent.token.address,
      currency_rate: fiat
        ? intent.decimalForms
          ? `${fiat.rate}${fiat.rate.includes('.') ? '0' : '.0'}`
          : fiat.rate
        : null,
      status: now.status,
      order_id: `order-${intent.id.slice(0, 8)}`,
      order_description: null,
      user_id: null,
      user_name: null,
      error_message: null,
      tx_hash: paid ? (intent.namedTx ?? intent.tx1) : null,
      tx_hash_2: confirmed ? intent.tx2 : null,
      tx_from: paid ? intent.payer : null,
      tx_to: merchantOf.get(intent.storeId),
      actual_paid_amount: decided ? fmt(intent.P, 'actual_paid_amount') : null,
      service_fee_amount: confirmed ? fmt(intent.F, 'service_fee_amount') : null,
      net_income_amount: confirmed
        ? fmt(intent.reportedNet ?? intent.P - intent.F, 'net_income_amount')
        : null,
      payment_method_type: 1,
      accepted_stable_coins: null,
    });
  };

  const payoutsByRef = new Map(world.payouts.map((p) => [p.referenceId, p]));
  const payoutsByLink = new Map(world.payouts.map((p) => [p.linkId, p]));
  const links = new Map<string, LinkState>();
  const custodyOf = new Map(world.stores.map((s) => [s.storeId, s.custody]));
  const transfer = (
    p: SimPayout,
    from: `0x${string}`,
    to: `0x${string}`,
    value: bigint,
    txHash: `0x${string}`,
  ) => send({ token: p.token.address, from, to, value, txHash });
  /**
   * The service's transfers waiting for their time: refund pieces (shape refund_pieces: some come
   * late), the rest of a funding and its fee sweep (shape funding_pieces).
   */
  type Queued = {
    at: number;
    p: SimPayout;
    from: `0x${string}`;
    to: `0x${string}`;
    value: bigint;
    txHash: `0x${string}`;
  };
  let queued: Queued[] = [];
  let clock = 0;
  const release = (now: number) => {
    clock = Math.max(clock, now);
    const due = queued.filter((q) => q.at <= clock);
    queued = queued.filter((q) => q.at > clock);
    for (const q of due) transfer(q.p, q.from, q.to, q.value, q.txHash);
  };
  /** The link's refund to custody: one transfer of A, or the world's pieces, each at its delay. */
  const payRefund = (p: SimPayout) => {
    const pieces = p.refundPieces ?? [{ value: p.A, txHash: p.refundTx, delayMs: 0 }];
    const custody = custodyOf.get(p.storeId) as `0x${string}`;
    for (const piece of pieces)
      queued.push({
        at: clock + piece.delayMs,
        p,
        from: p.pool,
        to: custody,
        value: piece.value,
        txHash: piece.txHash,
      });
    release(clock);
  };
  /**
   * The link's funding: A + F to the pool and F swept out, or (funding_pieces) a first part now
   * and the rest later with the sweep after it, or the whole funding a second time later.
   */
  const fund = (p: SimPayout, custody: `0x${string}`, now: number) => {
    const pieces = p.fundingPieces ?? [];
    const rest = p.fundingKind === 'split' ? pieces.reduce((sum, f) => sum + f.value, 0n) : 0n;
    transfer(p, custody, p.pool, p.A + p.F - rest, p.fundingTx);
    for (const f of pieces)
      queued.push({ at: now + f.delayMs, p, from: custody, to: p.pool, value: f.value, txHash: f.txHash });
    const sweepAt = p.fundingKind === 'split' ? now + Math.max(...pieces.map((f) => f.delayMs)) : now;
    if (p.F > 0n && sweepAt === now) transfer(p, p.pool, world.feeWallet, p.F, p.sweepTx);
    else if (p.F > 0n)
      queued.push({ at: sweepAt, p, from: p.pool, to: world.feeWallet, value: p.F, txHash: p.sweepTx });
  };
  let linkWebhooks: Array<ClaimLinkWebhook & { at: number }> = [];
  const refund = (p: SimPayout, link: LinkState, status: 'cancelled' | 'expired') => {
    link.status = status;
    // Only a cancel is announced, once the refund is whole on chain (the spec's cancelled webhook).
    if (status === 'cancelled') {
      const pieces = p.refundPieces ?? [{ value: p.A, txHash: p.refundTx, delayMs: 0 }];
      let sum = 0n;
      const whole = pieces.find((piece) => {
        sum += piece.value;
        return sum >= p.A;
      });
      if (whole)
        linkWebhooks.push({
          at: clock + whole.delayMs + CANCELLED_WEBHOOK_DELAY_MS,
          storeId: p.storeId,
          webhookId: `whcl_${p.linkId}`,
          body: {
            event: 'cancelled',
            claim_link_id: p.linkId,
            reference_id: p.referenceId,
            refund_tx_hash: pieces[0]?.txHash ?? p.refundTx,
          },
        });
    }
    payRefund(p);
  };
  /** Links whose dropped funding the service sent again (funding_resent), by reference id. */
  const resent = new Set<string>();
  /** Claimed links the service will also refund (shape claimed_then_refunded), by when. */
  const refundsAfterClaim = new Map<string, number>();
  const notCancellable = (status: string) =>
    new SvcApiError({
      endpoint: 'claim_links.cancel',
      code: 50108,
      httpStatus: 400,
      message: `claim link is ${status}`,
      details: { status },
      requestId: undefined,
      retryable: false,
    });

  return {
    linkStatus: (referenceId) => {
      const p = payoutsByRef.get(referenceId);
      return p ? links.get(p.linkId)?.status : undefined;
    },
    transferDropped(txHash) {
      const p = world.payouts.find((q) => q.fundingTx === txHash && q.fundingResend);
      if (!p?.fundingResend || resent.has(p.referenceId) || !links.has(p.linkId)) return;
      resent.add(p.referenceId);
      const custody = custodyOf.get(p.storeId) as `0x${string}`;
      const { txHash: again, delayMs } = p.fundingResend;
      queued.push({ at: clock + delayMs, p, from: custody, to: p.pool, value: p.A + p.F, txHash: again });
    },
    claim(referenceId) {
      const p = payoutsByRef.get(referenceId);
      const link = p && links.get(p.linkId);
      if (!p || link?.status !== 'link_sent') return;
      link.status = 'claimed';
      transfer(p, p.pool, p.recipient, p.A, p.claimTx);
      if (p.refundAfterClaimMs !== undefined)
        refundsAfterClaim.set(p.referenceId, clock + p.refundAfterClaimMs);
    },
    advance(now) {
      release(now);
      for (const [ref, at] of refundsAfterClaim) {
        const p = payoutsByRef.get(ref);
        if (!p || at > clock) continue;
        refundsAfterClaim.delete(ref);
        // The service contradicts itself: the link stays claimed, and its pool pays custody back.
        payRefund(p);
      }
      for (const p of world.payouts) {
        const link = links.get(p.linkId);
        if (link?.status === 'link_sent' && link.fundedAt + EXPIRY_MS <= now) refund(p, link, 'expired');
      }
    },
    stateAt,
    takeClaimLinkWebhooks() {
      const due = linkWebhooks.filter((w) => w.at <= clock);
      linkWebhooks = linkWebhooks.filter((w) => w.at > clock);
      return due.map(({ at: _at, ...w }) => w);
    },
    webhookAt(intent, t, webhookId) {
      const state = stateAt(intent, t);
      if (!state?.tx_hash || !state.tx_from || !state.coin_contract || state.chain_id === null) return null;
      return {
        all_svc_transaction_id: `txn-${intent.id}`,
        all_svc_checkout_intent_id: intent.id,
        webhook_id: webhookId,
        // The price as submitted: fiat cents, or (not simulated) the coin's cents.
        amount_cents: intent.fiat ? Number(intent.fiat.cents) : 0,
        currency: state.currency,
        currency_symbol: state.currency_symbol,
        amount_coins: state.amount_coins,
        coin_contract_address: state.coin_contract,
        coin_symbol: state.coin_symbol,
        chain_id: state.chain_id,
        tx_hash: state.tx_hash,
        tx_from: state.tx_from,
        payment_method_type: state.payment_method_type,
        user_id: null,
        order_id: state.order_id,
        user_name: null,
        extra_obj: null,
        status: state.status,
        actual_paid_amount: state.actual_paid_amount,
      };
    },
    client(storeId, now, faults, call = () => false) {
      const read = (endpoint: string, id: string): CheckoutIntent => {
        const planned = call(endpoint);
        if (planned === 'lost') throw lostAnswer(endpoint);
        if (planned) throw refusal(endpoint, planned);
        const f = faults();
        if (f.fail === '5xx') throw new SvcTransportError(endpoint, true, 'simulated 502 from the gateway');
        if (f.fail === '429') throw new SvcRateLimitError(endpoint, 1_000);
        const intent = byId.get(id);
        const state = intent && intent.storeId === storeId ? stateAt(intent, now() - f.lagMs) : undefined;
        if (!state) {
          throw new SvcApiError({
            endpoint,
            code: 50001,
            httpStatus: 404,
            message: 'checkout intent not found',
            details: {},
            requestId: undefined,
            retryable: false,
          });
        }
        return state;
      };
      const unsupported = (what: string) => () =>
        Promise.reject(new Error(`service double: ${what} is not simulated`));
      return {
        ping: unsupported('ping'),
        fail: unsupported('fail'),
        echo: unsupported('echo'),
        createCheckoutIntent: unsupported('createCheckoutIntent'),
        async createClaimLinkAutoPayout(request) {
          const planned = call('claim_links.create');
          if (planned === '5xx' || planned === '429') throw refusal('claim_links.create', planned);
          const p = payoutsByRef.get(request.reference_id);
          if (!p || p.storeId !== storeId)
            throw new Error(`service double: no payout ${request.reference_id}`);
          let link = links.get(p.linkId);
          const first = !link;
          if (!link) {
            link = { status: 'link_sent', fundedAt: now() };
            links.set(p.linkId, link);
            fund(p, custodyOf.get(storeId) as `0x${string}`, now());
            // The create call blocks while the funding settles: it is in a block before any answer.
            settle(p.token.chainId);
            if (p.lostAnswer)
              throw new SvcTransportError(
                'claim_links.create',
                true,
                'simulated timeout after the service acted',
              );
          }
          // The service acted (funded the link, or matched the earlier call) and the answer is lost.
          if (planned === 'lost') throw lostAnswer('claim_links.create');
          const d = p.token.decimals;
          const fmt = (units: bigint, field: string) =>
            p.decimalForms
              ? decimalForm(units, d, `${p.linkId}:${now()}:${field}`)
              : formatDecimalAmount(units, d);
          return {
            claim_link_id: p.linkId,
            reference_id: p.referenceId,
            amount: fmt(p.A, 'amount'),
            token_symbol: p.token.symbol,
            chain_id: p.token.chainId,
            status: link.status,
            token: first ? `tok_${p.linkId}` : null,
            claim_url: first ? `https://claim.sim/${p.linkId}#tok_${p.linkId}` : null,
            funding_tx_hash: first ? p.fundingTx : null,
            funded_amount: first ? fmt(p.A, 'funded_amount') : null,
            idempotent_hit: !first,
          };
        },
        async cancelClaimLinkAutoPayout(id) {
          const planned = call('claim_links.cancel');
          if (planned === '5xx' || planned === '429') throw refusal('claim_links.cancel', planned);
          const p = payoutsByLink.get(id);
          const link = p && links.get(p.linkId);
          // A lost answer: the service did what it does below (cancel and refund, or refuse), unheard.
          const answer = <T>(value: T): T => {
            if (planned === 'lost') throw lostAnswer('claim_links.cancel');
            return value;
          };
          if (!p || !link) throw answer(notCancellable('unknown'));
          if (link.status === 'cancelled')
            return answer({ claim_link_id: id, status: 'cancelled', already_cancelled: true });
          const accepted = {
            claim_link_id: id,
            reference_id: p.referenceId,
            status: 'cancelled',
            refund_status: 'refund_pending',
            already_cancelled: false,
          } as const;
          // cancel_races_claim: the cancel is answered as done, the link stays claimed, nothing refunded.
          if (link.status === 'claimed' && p.cancelRacesClaim) return answer(accepted);
          if (link.status !== 'link_sent') throw answer(notCancellable(link.status));
          refund(p, link, 'cancelled');
          return answer(accepted);
        },
        getCheckoutIntent: async (id) => read('checkout_intents.get', id),
        getCheckoutIntentStatus: async (id) => read('checkout_intents.status', id).status,
      };
    },
  };
}
