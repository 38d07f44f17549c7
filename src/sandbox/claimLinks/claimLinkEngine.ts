import { randomBytes } from 'node:crypto';
import type { Address, Hash } from 'viem';
import { coerceError } from '../../errors/coerceError.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import type { CancelClaimLinkResult, CreateClaimLinkResult } from '../../svc/models/claimLink.ts';
import type { ClaimLinkStatus } from '../../svc/models/claimLinkStatus.ts';
import type { ServiceChainInfo } from '../../svc/models/serviceChain.ts';
import type { StoreIdentity } from '../authenticate.ts';
import type { CoinSymbol } from '../chain/types.ts';
import { apiError, validationError } from '../sandboxApiError.ts';
import { custodyWallet, findStore, type SandboxWorld } from '../world.ts';
import {
  applySettingsPatch,
  type ClaimLinkSettings,
  type ClaimLinkSettingsPatch,
  claimLinkSettingsSchema,
  DEFAULT_CLAIM_LINK_SETTINGS,
  fundingFeeUnits,
} from './claimLinkSettings.ts';
import { createKeyedLock } from './keyedLock.ts';
import { type CreateRequest, parseCreateRequest } from './parseCreateRequest.ts';

/**
 * The simulated claim-link auto-payout service: create and fund, cancel, and what the spec leaves
 * to time and to the recipient (the deposit scanner, claiming, the 14-day expiry, refunds).
 *
 * Glossary
 * - link: one claim link, kept in memory; its id looks like `cl_` and 24 hex digits;
 * - token: the link's bearer secret, returned once by create; claim_url is built from it;
 * - principal: the claimable amount; fee: what the service keeps for funding it;
 * - custody wallet (`custody:<business_id>`): funds links and receives their refunds;
 * - pool wallet (`pool:<claim_link_id>`): holds one link's principal until it is claimed or refunded;
 * - fee wallet (`fees:<chain_id>`): the service's own wallet where funding fees end up;
 * - recipient wallet (`recipient:<claim_link_id>`, unless the claim names another address).
 *
 * Money on chain, for a link of principal A and fee F:
 * - create: custody -> pool A + F (funding_tx_hash, the custody outflow X = A + F of docs/accounting.md, rule 5),
 *   then pool -> fee wallet F, so the pool holds A;
 * - claim: pool -> recipient A;
 * - cancel or expiry: pool -> custody everything the pool holds (A, plus any overpayment), never F.
 *
 * States: pending_deposit (funded by create, not yet seen by the scanner) -> link_sent after the
 * scanner delay -> claiming -> claimed; link_sent -> cancelled (refund, then the cancelled webhook);
 * pending_deposit or link_sent -> expired after 14 days (refund, no webhook). A create whose funding
 * fails leaves no link behind, so there are no unfunded links to expire.
 */

export const CLAIM_LINK_SCOPE = 'claim_link:auto_payout';

const ID_RE = /^cl_[0-9a-f]{24}$/;
const MAX_REFUND_ATTEMPTS = 5;

export interface FundingFault {
  reason?: string | undefined;
  reasonCode?: string | undefined;
  plutusCode?: number | undefined;
  /** How many of the next funding creates fail this way (default 1). */
  count?: number | undefined;
}

/** A link as the control API shows it: everything but the bearer token. */
export interface ClaimLinkView {
  claim_link_id: string;
  business_id: string;
  store_id: string;
  reference_id: string;
  status: ClaimLinkStatus;
  service_chain: number;
  chain_id: number;
  token_symbol: CoinSymbol;
  token_address: Address;
  amount: string;
  fee_amount: string;
  /** The custody outflow of the funding transfer: amount + fee. */
  funding_total: string;
  funded_amount: string;
  custody_address: Address;
  pool_address: Address;
  fees_address: Address | null;
  funding_tx_hash: Hash;
  fee_tx_hash: Hash | null;
  recipient: Address | null;
  claim_tx_hash: Hash | null;
  refund_status: 'refund_pending' | 'refunded' | null;
  refund_tx_hash: Hash | null;
  refund_amount: string | null;
  refund_error: string | null;
  webhook_id: string | null;
  receiver_email: string | null;
  sender_display_name: string | null;
  sender_message: string | null;
  created_at: string;
  funded_at: string;
  link_sent_at: string | null;
  expires_at: string;
  claiming_at: string | null;
  claimed_at: string | null;
  cancelled_at: string | null;
  expired_at: string | null;
  refunded_at: string | null;
}

/** What the public claim page may show: the holder of the URL already knows the token. */
export interface ClaimPageView {
  status: ClaimLinkStatus;
  amount: string;
  token_symbol: CoinSymbol;
  chain_id: number;
  chain_name: string;
  sender_display_name: string | null;
  sender_message: string | null;
  expires_at: string;
}

/** A control-API failure: plain JSON {error} with this HTTP status. */
export class ClaimLinkControlError extends Error {
  override name = 'ClaimLinkControlError';
  constructor(
    readonly httpStatus: number,
    message: string,
  ) {
    super(message);
  }
}

export interface ClaimLinkEngine {
  /** POST /v1/claim_link_auto_payouts for an authenticated store; throws SandboxApiError. */
  create(identity: StoreIdentity, rawBody: Buffer): Promise<CreateClaimLinkResult>;
  /** POST /v1/claim_link_auto_payouts/{id}/cancel; throws SandboxApiError. */
  cancel(identity: StoreIdentity, id: string, rawBody: Buffer): CancelClaimLinkResult;
  /**
   * The recipient claims: link_sent -> claiming -> claimed with a transfer pool -> recipient.
   * stopAt 'claiming' leaves the link in claiming (payout not yet sent); a second claim completes it.
   * Throws ClaimLinkControlError.
   */
  claim(
    id: string,
    options?: { recipient?: Address | undefined; stopAt?: 'claiming' | undefined },
  ): Promise<ClaimLinkView>;
  list(): ClaimLinkView[];
  get(id: string): ClaimLinkView | undefined;
  byToken(token: string): ClaimPageView | undefined;
  /** The next funding creates fail with 50103 and these details (no funds move). */
  failNext(fault: FundingFault): void;
  settings(): ClaimLinkSettings;
  configure(patch: ClaimLinkSettingsPatch): ClaimLinkSettings;
  /** Cancels every pending timer (scanner, refunds, expiries). */
  stop(): void;
}

interface ClaimLink {
  id: string;
  businessId: string;
  storeId: string;
  referenceId: string;
  serviceChain: ServiceChainInfo;
  chainId: number;
  coin: number;
  symbol: CoinSymbol;
  decimals: number;
  amount: bigint;
  fee: bigint;
  /** Fee still in the pool because its sweep to the fee wallet failed (retried before any refund). */
  unsweptFee: bigint;
  token: string;
  status: ClaimLinkStatus;
  custodyAddress: Address;
  poolAddress: Address;
  feesAddress: Address | null;
  fundingTxHash: Hash;
  feeTxHash: Hash | null;
  recipient: Address | null;
  claimTxHash: Hash | null;
  refundStatus: 'refund_pending' | 'refunded' | null;
  refundTxHash: Hash | null;
  refundAmount: bigint | null;
  refundAttempts: number;
  refundError: string | null;
  webhookId: string | null;
  receiverEmail: string | null;
  senderDisplayName: string | null;
  senderMessage: string | null;
  createdAt: Date;
  fundedAt: Date;
  linkSentAt: Date | null;
  expiresAt: Date;
  claimingAt: Date | null;
  claimedAt: Date | null;
  cancelledAt: Date | null;
  expiredAt: Date | null;
  refundedAt: Date | null;
  timers: { scanner?: () => void; expiry?: () => void; refund?: () => void; sweep?: () => void };
}

const NOT_CANCELLABLE_REASON: Record<ClaimLinkStatus, string> = {
  pending_deposit: 'the link is not funded yet: its funding has not been confirmed by the deposit scanner',
  link_sent: '',
  claiming: 'the recipient has started claiming the link',
  claimed: 'the link has been claimed by its recipient',
  expired: 'the link has expired and its funds were refunded',
  cancelled: 'the link is already cancelled',
};

const poolLabel = (id: string) => `pool:${id}`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);
const shortMessage = (err: unknown) => coerceError(err).message.split('\n')[0]?.slice(0, 200) ?? '';

export function createClaimLinkEngine(
  world: SandboxWorld,
  options: { settings?: ClaimLinkSettingsPatch } = {},
): ClaimLinkEngine {
  let settings = claimLinkSettingsSchema.parse(
    applySettingsPatch(DEFAULT_CLAIM_LINK_SETTINGS, options.settings ?? {}),
  );
  const links = new Map<string, ClaimLink>();
  const byReference = new Map<string, string>();
  const byTokenIndex = new Map<string, string>();
  const faults: Array<Required<Pick<FundingFault, 'count'>> & FundingFault> = [];
  const lock = createKeyedLock();

  const fmt = (link: ClaimLink, units: bigint) => formatDecimalAmount(units, link.decimals);
  const claimUrl = (token: string) => `${world.baseUrl().replace(/\/+$/, '')}/claim/${token}`;

  function requireProductionKeyAndScope(identity: StoreIdentity): void {
    if (identity.store.sandbox_key) {
      throw apiError(50104, 'Sandbox API keys cannot use claim-link auto-payouts', { reason: 'sandbox_key' });
    }
    if (!identity.store.scopes.includes(CLAIM_LINK_SCOPE)) {
      throw apiError(30002, 'Scope forbidden: the store lacks claim_link:auto_payout', {
        required_scope: CLAIM_LINK_SCOPE,
      });
    }
  }

  function takeFault(): FundingFault | undefined {
    const fault = faults[0];
    if (!fault) return undefined;
    fault.count -= 1;
    if (fault.count <= 0) faults.shift();
    return fault;
  }

  function faultError(fault: FundingFault) {
    const reason =
      fault.reason ??
      (fault.reasonCode === 'signer_error'
        ? 'temporary signer fault; retry with the same reference_id'
        : fault.reasonCode === 'session_expired'
          ? 'auto-payout session lapsed or absent'
          : fault.reasonCode === 'policy_denied'
            ? 'wallet policy declined the signature'
            : fault.plutusCode === 8148
              ? 'the payout could not be signed; no funds moved'
              : 'funding failed');
    return apiError(50103, 'Claim link auto-payout funding failed', {
      reason,
      ...(fault.reasonCode !== undefined ? { reason_code: fault.reasonCode } : {}),
      ...(fault.plutusCode !== undefined ? { plutus_code: fault.plutusCode } : {}),
    });
  }

  async function create(identity: StoreIdentity, rawBody: Buffer): Promise<CreateClaimLinkResult> {
    if (!world.config.live_signing_enabled) {
      throw apiError(50104, 'Live signing is disabled on this environment', {
        reason: 'live_signing_disabled',
      });
    }
    requireProductionKeyAndScope(identity);
    const request = parseCreateRequest(rawBody, world);
    const key = `${identity.businessId}\n${identity.store.store_id}\n${request.referenceId}`;
    return lock(`ref:${key}`, async () => {
      const existingId = byReference.get(key);
      const existing = existingId ? links.get(existingId) : undefined;
      if (existing) return replay(existing, request);
      const fault = takeFault();
      if (fault) throw faultError(fault);
      const link = await lock(`fund:${identity.businessId}:${request.serviceChain.chainId}`, () =>
        fund(identity, request),
      );
      byReference.set(key, link.id);
      return {
        claim_link_id: link.id,
        reference_id: link.referenceId,
        amount: fmt(link, link.amount),
        token_symbol: link.symbol,
        chain_id: link.chainId,
        status: link.status,
        token: link.token,
        claim_url: claimUrl(link.token),
        funding_tx_hash: link.fundingTxHash,
        funded_amount: fmt(link, link.amount),
        idempotent_hit: false,
      };
    });
  }

  function replay(link: ClaimLink, request: CreateRequest): CreateClaimLinkResult {
    const same =
      link.serviceChain.serviceChain === request.serviceChain.serviceChain &&
      link.coin === request.coin &&
      link.amount === request.amount;
    if (!same) {
      throw apiError(50106, 'reference_id was already used with different parameters', {
        reference_id: link.referenceId,
        claim_link_id: link.id,
      });
    }
    return {
      claim_link_id: link.id,
      reference_id: link.referenceId,
      amount: fmt(link, link.amount),
      token_symbol: link.symbol,
      chain_id: link.chainId,
      status: link.status,
      token: null,
      claim_url: claimUrl(link.token),
      funding_tx_hash: null,
      funded_amount: null,
      idempotent_hit: true,
    };
  }

  /** Checks the custody balance and moves the money: custody -> pool (A + F), pool -> fee wallet (F). */
  async function fund(identity: StoreIdentity, request: CreateRequest): Promise<ClaimLink> {
    const { chain, symbol, amount } = request;
    const fee = fundingFeeUnits(settings, amount, chain.decimals);
    const total = amount + fee;
    const custodyAddress = await custodyWallet(chain, identity.businessId);
    const balance = await chain.balanceOf(symbol, custodyAddress);
    if (balance < total) {
      throw apiError(50103, 'Claim link auto-payout funding failed', {
        reason: `insufficient balance: the custody wallet holds ${formatDecimalAmount(balance, chain.decimals)} ${symbol}, the link needs ${formatDecimalAmount(total, chain.decimals)} (amount ${formatDecimalAmount(amount, chain.decimals)} plus fee ${formatDecimalAmount(fee, chain.decimals)})`,
      });
    }
    const id = `cl_${randomBytes(12).toString('hex')}`;
    const poolAddress = await chain.wallet(poolLabel(id));
    let fundingTxHash: Hash;
    try {
      fundingTxHash = (await chain.transfer(symbol, `custody:${identity.businessId}`, poolAddress, total))
        .txHash;
    } catch (err) {
      throw apiError(50103, 'Claim link auto-payout funding failed', {
        reason: `funding transfer failed: ${shortMessage(err)}`,
        reason_code: 'signer_error',
      });
    }
    const createdAt = world.clock.now();
    const token = randomBytes(32).toString('base64url');
    const link: ClaimLink = {
      id,
      businessId: identity.businessId,
      storeId: identity.store.store_id,
      referenceId: request.referenceId,
      serviceChain: request.serviceChain,
      chainId: chain.chainId,
      coin: request.coin,
      symbol,
      decimals: chain.decimals,
      amount,
      fee,
      unsweptFee: fee,
      token,
      status: 'pending_deposit',
      custodyAddress,
      poolAddress,
      feesAddress: null,
      fundingTxHash,
      feeTxHash: null,
      recipient: null,
      claimTxHash: null,
      refundStatus: null,
      refundTxHash: null,
      refundAmount: null,
      refundAttempts: 0,
      refundError: null,
      webhookId: null,
      receiverEmail: request.receiverEmail,
      senderDisplayName: request.senderDisplayName,
      senderMessage: request.senderMessage,
      createdAt,
      fundedAt: createdAt,
      linkSentAt: null,
      expiresAt: new Date(createdAt.getTime() + settings.expiry_ms),
      claimingAt: null,
      claimedAt: null,
      cancelledAt: null,
      expiredAt: null,
      refundedAt: null,
      timers: {},
    };
    links.set(id, link);
    byTokenIndex.set(token, id);
    await sweepFee(link);
    link.timers.scanner = world.clock.after(settings.scanner_delay_ms, () => {
      if (link.status !== 'pending_deposit') return;
      link.status = 'link_sent';
      link.linkSentAt = world.clock.now();
    });
    link.timers.expiry = world.clock.at(link.expiresAt, () => expire(link));
    return link;
  }

  /** Pays the funding fee from the pool to the service's fee wallet; retried later if it fails. */
  async function sweepFee(link: ClaimLink): Promise<void> {
    if (link.unsweptFee === 0n) return;
    const chain = world.chains.get(link.chainId);
    if (!chain) return;
    try {
      link.feesAddress = await chain.wallet(`fees:${link.chainId}`);
      link.feeTxHash = (
        await chain.transfer(link.symbol, poolLabel(link.id), link.feesAddress, link.unsweptFee)
      ).txHash;
      link.unsweptFee = 0n;
      link.timers.sweep = undefined;
    } catch {
      link.timers.sweep = world.clock.after(Math.max(settings.refund_delay_ms, 1000), () => sweepFee(link));
    }
  }

  function cancel(identity: StoreIdentity, id: string, rawBody: Buffer): CancelClaimLinkResult {
    requireProductionKeyAndScope(identity);
    if (rawBody.length > 0) {
      throw validationError({ field: 'body', reason: 'cancel takes no request body' });
    }
    const link = ID_RE.test(id) ? links.get(id) : undefined;
    if (!link || link.businessId !== identity.businessId) {
      // One answer for unknown, malformed and another business's id: nothing tells them apart.
      throw apiError(50107, 'Claim link not found', {});
    }
    if (link.status !== 'link_sent') {
      throw apiError(50108, 'Claim link cannot be cancelled in its current state', {
        status: link.status,
        reason: NOT_CANCELLABLE_REASON[link.status],
      });
    }
    link.status = 'cancelled';
    link.cancelledAt = world.clock.now();
    link.refundStatus = 'refund_pending';
    link.timers.expiry?.();
    link.timers.refund = world.clock.after(settings.refund_delay_ms, () => refund(link, 'cancelled'));
    return {
      claim_link_id: link.id,
      reference_id: link.referenceId,
      status: 'cancelled',
      refund_status: 'refund_pending',
    };
  }

  async function expire(link: ClaimLink): Promise<void> {
    if (link.status !== 'pending_deposit' && link.status !== 'link_sent') return;
    link.status = 'expired';
    link.expiredAt = world.clock.now();
    link.refundStatus = 'refund_pending';
    link.timers.scanner?.();
    await refund(link, 'expired');
  }

  /**
   * Pool -> custody of everything the pool holds except a fee it still owes the fee wallet: the
   * principal, plus any overpayment. A cancelled link's refund is then announced by the webhook.
   */
  async function refund(link: ClaimLink, why: 'cancelled' | 'expired'): Promise<void> {
    link.timers.refund = undefined;
    link.refundAttempts += 1;
    try {
      const chain = world.chains.get(link.chainId);
      if (!chain) throw new Error(`chain ${link.chainId} is no longer simulated`);
      await sweepFee(link);
      const refundable = (await chain.balanceOf(link.symbol, link.poolAddress)) - link.unsweptFee;
      if (refundable <= 0n) throw new Error('the pool holds nothing to refund');
      const mined = await chain.transfer(link.symbol, poolLabel(link.id), link.custodyAddress, refundable);
      link.refundTxHash = mined.txHash;
      link.refundAmount = refundable;
      link.refundStatus = 'refunded';
      link.refundedAt = world.clock.now();
      link.refundError = null;
    } catch (err) {
      link.refundError = shortMessage(err);
      if (link.refundAttempts < MAX_REFUND_ATTEMPTS) {
        link.timers.refund = world.clock.after(Math.max(settings.refund_delay_ms, 1000), () =>
          refund(link, why),
        );
      }
      return;
    }
    if (why === 'cancelled') sendCancelledWebhook(link);
  }

  function sendCancelledWebhook(link: ClaimLink): void {
    const store = findStore(world, link.storeId)?.store;
    // A store without claim_link_webhook_url has nowhere to be told; the link still shows the refund.
    if (!store?.claim_link_webhook_url) return;
    const webhookId = `wh_${randomBytes(12).toString('hex')}`;
    link.webhookId = webhookId;
    world.webhooks.send({
      kind: 'claim_link.cancelled',
      storeId: link.storeId,
      webhookId,
      payload: {
        event: 'cancelled',
        claim_link_id: link.id,
        reference_id: link.referenceId,
        refund_tx_hash: link.refundTxHash,
        refund_amount: link.refundAmount === null ? null : fmt(link, link.refundAmount),
        chain_id: link.chainId,
        token_symbol: link.symbol,
      },
    });
  }

  async function claim(
    id: string,
    claimOptions: { recipient?: Address | undefined; stopAt?: 'claiming' | undefined } = {},
  ): Promise<ClaimLinkView> {
    return lock(`claim:${id}`, async () => {
      const link = links.get(id);
      if (!link) throw new ClaimLinkControlError(404, `no claim link ${id}`);
      const chain = world.chains.get(link.chainId);
      if (!chain) throw new ClaimLinkControlError(409, `chain ${link.chainId} is no longer simulated`);
      if (link.status === 'link_sent') {
        link.status = 'claiming';
        link.claimingAt = world.clock.now();
        link.timers.expiry?.();
        link.recipient = claimOptions.recipient ?? (await chain.wallet(`recipient:${link.id}`));
        if (claimOptions.stopAt === 'claiming') return view(link);
      } else if (link.status !== 'claiming') {
        throw new ClaimLinkControlError(
          409,
          `claim link ${id} is ${link.status}; only a link_sent link can be claimed`,
        );
      }
      const recipient =
        link.recipient ?? claimOptions.recipient ?? (await chain.wallet(`recipient:${link.id}`));
      link.recipient = recipient;
      try {
        link.claimTxHash = (
          await chain.transfer(link.symbol, poolLabel(link.id), recipient, link.amount)
        ).txHash;
      } catch (err) {
        throw new ClaimLinkControlError(
          500,
          `payout transfer failed (the link stays claiming; claim again to retry): ${shortMessage(err)}`,
        );
      }
      link.status = 'claimed';
      link.claimedAt = world.clock.now();
      return view(link);
    });
  }

  function view(link: ClaimLink): ClaimLinkView {
    return {
      claim_link_id: link.id,
      business_id: link.businessId,
      store_id: link.storeId,
      reference_id: link.referenceId,
      status: link.status,
      service_chain: link.serviceChain.serviceChain,
      chain_id: link.chainId,
      token_symbol: link.symbol,
      token_address: world.chains.get(link.chainId)?.tokens[link.symbol].address ?? '0x',
      amount: fmt(link, link.amount),
      fee_amount: fmt(link, link.fee),
      funding_total: fmt(link, link.amount + link.fee),
      funded_amount: fmt(link, link.amount),
      custody_address: link.custodyAddress,
      pool_address: link.poolAddress,
      fees_address: link.feesAddress,
      funding_tx_hash: link.fundingTxHash,
      fee_tx_hash: link.feeTxHash,
      recipient: link.recipient,
      claim_tx_hash: link.claimTxHash,
      refund_status: link.refundStatus,
      refund_tx_hash: link.refundTxHash,
      refund_amount: link.refundAmount === null ? null : fmt(link, link.refundAmount),
      refund_error: link.refundError,
      webhook_id: link.webhookId,
      receiver_email: link.receiverEmail,
      sender_display_name: link.senderDisplayName,
      sender_message: link.senderMessage,
      created_at: link.createdAt.toISOString(),
      funded_at: link.fundedAt.toISOString(),
      link_sent_at: iso(link.linkSentAt),
      expires_at: link.expiresAt.toISOString(),
      claiming_at: iso(link.claimingAt),
      claimed_at: iso(link.claimedAt),
      cancelled_at: iso(link.cancelledAt),
      expired_at: iso(link.expiredAt),
      refunded_at: iso(link.refundedAt),
    };
  }

  return {
    create,
    cancel,
    claim,
    list: () => [...links.values()].map(view),
    get: (id) => {
      const link = links.get(id);
      return link ? view(link) : undefined;
    },
    byToken: (token) => {
      const id = byTokenIndex.get(token);
      const link = id ? links.get(id) : undefined;
      if (!link) return undefined;
      return {
        status: link.status,
        amount: fmt(link, link.amount),
        token_symbol: link.symbol,
        chain_id: link.chainId,
        chain_name: link.serviceChain.name,
        sender_display_name: link.senderDisplayName,
        sender_message: link.senderMessage,
        expires_at: link.expiresAt.toISOString(),
      };
    },
    failNext: (fault) => {
      faults.push({ ...fault, count: fault.count ?? 1 });
    },
    settings: () => settings,
    configure: (patch) => {
      settings = claimLinkSettingsSchema.parse(applySettingsPatch(settings, patch));
      return settings;
    },
    stop: () => {
      for (const link of links.values()) {
        for (const cancelTimer of Object.values(link.timers)) cancelTimer?.();
        link.timers = {};
      }
    },
  };
}
