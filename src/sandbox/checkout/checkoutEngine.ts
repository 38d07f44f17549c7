/**
 * Checkout intents in the simulated service: creation with every rule of the spec, reads, the
 * hosted page's first view, payments with real token transfers, the inactivity timeout and the
 * checkout webhook. No HTTP here: routes call these functions.
 *
 * Glossary
 * - requested amount R: amount_coins, what the merchant asked for (fixed at creation);
 * - gross P: what the buyer sent (actual_paid_amount);
 * - fee F: the service fee kept back on a temporary-wallet payment (service_fee_amount);
 * - net N = P - F: what reached the merchant wallet (net_income_amount);
 * - route: temp_wallet (buyer -> fresh temporary wallet -> merchant wallet, KYT screened, fee
 *   charged) or direct (buyer -> merchant wallet, no fee);
 * - outcome: how the service settles a payment: confirmed, underpaid, rejected (KYT) or manual.
 *
 * Amounts are bigint base units of the paying chain's token (6 decimals, 18 on BNB) and decimal
 * strings on the wire; no JavaScript number holds one.
 */
import { randomUUID } from 'node:crypto';
import type { Address, Hash } from 'viem';
import { coerceError } from '../../errors/coerceError.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../../money/decimalAmount.ts';
import { CheckoutStatus, checkoutStatusName } from '../../svc/models/checkoutStatus.ts';
import { type Currency, currencyCode } from '../../svc/models/currency.ts';
import { PaymentMethodType } from '../../svc/models/paymentMethodType.ts';
import {
  coinsToFlags,
  flagsInclude,
  flagsToCoins,
  StableCoin,
  type StableCoinFlags,
  stableCoinSymbol,
} from '../../svc/models/stableCoin.ts';
import type { StoreIdentity } from '../authenticate.ts';
import type { CoinSymbol, SandboxChain } from '../chain/types.ts';
import { apiError } from '../sandboxApiError.ts';
import { findStore, merchantWallet, type SandboxWorld } from '../world.ts';
import { CheckoutControlError } from './checkoutControlError.ts';
import { type CreateCheckoutRequest, parseCreateCheckoutRequest } from './createCheckoutRequest.ts';
import { fiatCentsToCoinUnits, fxRate } from './fxRates.ts';
import { isObjectId, newObjectId } from './intentId.ts';

/**
 * amount_coins is kept at 6 decimals, the fewest any simulated token has, so the requested amount
 * is payable exactly on every chain (18-decimal BNB tokens included).
 */
export const COIN_AMOUNT_DECIMALS = 6;
/** The spec's floor: the amount must be strictly greater than 0.1 of the settlement coin. */
const FLOOR_UNITS = 10n ** BigInt(COIN_AMOUNT_DECIMALS - 1);

export const DEFAULT_SERVICE_FEE_BPS = 100;
export const DEFAULT_INACTIVITY_TIMEOUT_MS = 30 * 60 * 1000;

export interface CheckoutEngineOptions {
  /** Fee on temporary-wallet payments, in basis points of the gross amount (default 100 = 1%). */
  serviceFeeBps?: number;
  /** An intent still CREATED or VIEWED this long after creation (sandbox clock) becomes TIMEOUT. */
  inactivityTimeoutMs?: number;
}

/** The spec's create result, as sent in the envelope. */
export interface CreateCheckoutIntentWire {
  checkout_url: string;
  allsvc_checkout_intent_id: string;
  amount_coins: string;
  stable_coin_type: StableCoin;
  rate: string | null;
  accepted_stable_coins: StableCoinFlags;
}

/** The spec's checkout intent object (GET /v1/checkout_intents/{id}), every field present. */
export interface CheckoutIntentWire {
  all_svc_checkout_intent_id: string;
  currency: Currency | null;
  currency_symbol: string | null;
  /** Exact: the submitted integer was checked to be at most 2^53 - 1 (see wireCents). */
  amount_cents: number | null;
  chain_id: number | null;
  amount_coins: string;
  coin_symbol: CoinSymbol;
  coin_contract: string | null;
  currency_rate: string | null;
  status: CheckoutStatus;
  order_id: string | null;
  order_description: string | null;
  user_id: string | null;
  user_name: string | null;
  error_message: string | null;
  tx_hash: string | null;
  tx_hash_2: string | null;
  tx_from: string | null;
  tx_to: string;
  actual_paid_amount: string | null;
  service_fee_amount: string | null;
  net_income_amount: string | null;
  payment_method_type: PaymentMethodType;
  accepted_stable_coins: StableCoinFlags;
}

export type PayRoute = 'temp_wallet' | 'direct';
export type PayOutcome = 'confirmed' | 'underpaid' | 'rejected' | 'manual';

export interface PayRequest {
  /** Gross amount the buyer sends, a decimal string in the token's units; default: the requested amount. */
  amount?: string;
  coin?: StableCoin;
  chainId?: number;
  route?: PayRoute;
  outcome?: PayOutcome;
  paymentMethodType?: PaymentMethodType;
  /** Confirm an amount below the requested one (outcome confirmed) instead of sending it back. */
  acceptUnderpayment?: boolean;
  /** Report this net_income_amount instead of P - F; the transfers are unchanged. */
  reportedNetIncome?: string;
}

export interface StatusChange {
  status: CheckoutStatus;
  name: string;
  /** Sandbox time, ISO 8601. */
  at: string;
  note: string | null;
}

/** What the control API shows: the spec's object plus what only the simulator knows. */
export interface SandboxIntentView extends CheckoutIntentWire {
  sandbox: {
    business_id: string;
    store_id: string;
    created_at: string;
    redirect_url: string | null;
    history: StatusChange[];
    payment: {
      route: PayRoute;
      outcome: PayOutcome;
      chain_id: number;
      coin_symbol: CoinSymbol;
      buyer_wallet: string;
      temp_wallet: string | null;
      merchant_wallet: string;
      mint_tx_hash: string;
      refund_tx_hash: string | null;
      /** Funds sitting in the temporary wallet awaiting manual review. */
      held_in_temp_wallet: boolean;
    } | null;
    transaction_id: string | null;
    webhook_id: string | null;
  };
}

export interface CheckoutEngine {
  /** POST /v1/checkout_intents/: rawBody is the exact request body. */
  create(identity: StoreIdentity, rawBody: Buffer | string): Promise<CreateCheckoutIntentWire>;
  /** GET /v1/checkout_intents/{id}: 50001 unknown or malformed id, 30001 another store's intent. */
  get(identity: StoreIdentity, id: string): CheckoutIntentWire;
  /** GET /v1/checkout_intents/{id}/status: the bare status integer; same errors as get. */
  status(identity: StoreIdentity, id: string): CheckoutStatus;
  /** The hosted page was opened: the first view moves CREATED to VIEWED. undefined when unknown. */
  view(id: string): SandboxIntentView | undefined;
  /** The intent for the hosted page without counting a view (HEAD requests). */
  peek(id: string): SandboxIntentView | undefined;
  /** Control API: the intent with its history and wallets (CheckoutControlError 404 when unknown). */
  inspect(id: string): SandboxIntentView;
  /** Control API: a buyer pays on chain; resolves once every transfer is mined and the status settled. */
  pay(id: string, request: PayRequest): Promise<SandboxIntentView>;
  /** Control API: force a status. Moves no funds, except when it resolves MANUAL_OPERATION. */
  forceStatus(id: string, status: CheckoutStatus): Promise<SandboxIntentView>;
  /** Cancels the pending inactivity timers. */
  stop(): void;
}

interface Payment {
  route: PayRoute;
  outcome: PayOutcome;
  chainId: number;
  symbol: CoinSymbol;
  decimals: number;
  buyerLabel: string;
  buyer: Address;
  tempLabel: string | null;
  temp: Address | null;
  merchantLabel: string;
  merchant: Address;
  mintTxHash: Hash;
  gross: bigint;
  refundTxHash: Hash | null;
  heldInTemp: boolean;
  /** A net_income_amount to report instead of P - F (the fee-arithmetic-mismatch scenario). */
  reportedNet: string | null;
}

interface IntentRecord {
  id: string;
  businessId: string;
  storeId: string;
  createdAt: Date;
  request: CreateCheckoutRequest;
  /** The settlement coin: stable_coin, or the first accepted coin, else USDT; the paid coin once paid. */
  coin: StableCoin;
  /** R at COIN_AMOUNT_DECIMALS. */
  requestedUnits: bigint;
  rate: string | null;
  acceptedFlags: StableCoinFlags;
  chainId: number;
  coinContract: Address;
  txTo: Address;
  status: CheckoutStatus;
  history: StatusChange[];
  errorMessage: string | null;
  txHash: Hash | null;
  txHash2: Hash | null;
  txFrom: Address | null;
  actualPaid: string | null;
  serviceFee: string | null;
  netIncome: string | null;
  paymentMethodType: PaymentMethodType;
  payment: Payment | null;
  transactionId: string | null;
  webhookId: string | null;
  /** A payment or forced settlement is moving funds: other actions wait their turn (409). */
  busy: boolean;
  cancelTimeout: (() => void) | null;
}

const WAITING: ReadonlySet<CheckoutStatus> = new Set([CheckoutStatus.CREATED, CheckoutStatus.VIEWED]);

export function createCheckoutEngine(
  world: SandboxWorld,
  options: CheckoutEngineOptions = {},
): CheckoutEngine {
  const bps = options.serviceFeeBps ?? DEFAULT_SERVICE_FEE_BPS;
  if (!Number.isInteger(bps) || bps < 0 || bps > 10_000) {
    throw new RangeError('serviceFeeBps must be an integer from 0 to 10000');
  }
  const feeBps = BigInt(bps);
  const timeoutMs = options.inactivityTimeoutMs ?? DEFAULT_INACTIVITY_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new RangeError('inactivityTimeoutMs must be positive');

  const intents = new Map<string, IntentRecord>();

  const setStatus = (r: IntentRecord, status: CheckoutStatus, note: string | null = null) => {
    r.status = status;
    r.history.push({ status, name: checkoutStatusName(status), at: world.clock.now().toISOString(), note });
  };

  const armTimeout = (r: IntentRecord, from: Date) => {
    r.cancelTimeout?.();
    r.cancelTimeout = world.clock.at(new Date(from.getTime() + timeoutMs), () => {
      r.cancelTimeout = null;
      if (WAITING.has(r.status) && !r.busy) {
        setStatus(r, CheckoutStatus.TIMEOUT, `no payment within ${timeoutMs / 1000}s of sandbox time`);
      }
    });
  };

  /** The caller's intent: 50001 when unknown or malformed, 30001 when another store's. */
  const owned = (identity: StoreIdentity, id: string): IntentRecord => {
    const r = isObjectId(id) ? intents.get(id) : undefined;
    if (!r) throw apiError(50001, 'Checkout intent not found', { checkout_intent_id: id });
    if (r.businessId !== identity.businessId || r.storeId !== identity.store.store_id) {
      throw apiError(30001, 'Forbidden', { reason: 'checkout intent belongs to another store' });
    }
    return r;
  };

  const known = (id: string): IntentRecord => {
    const r = isObjectId(id) ? intents.get(id) : undefined;
    if (!r) throw new CheckoutControlError(404, `no checkout intent ${id}`);
    return r;
  };

  const firstChain = (): SandboxChain => {
    const chain = world.chains.values().next().value;
    if (!chain) throw new Error('sandbox: no chain is simulated');
    return chain;
  };

  async function create(
    identity: StoreIdentity,
    rawBody: Buffer | string,
  ): Promise<CreateCheckoutIntentWire> {
    const req = parseCreateCheckoutRequest(rawBody);
    // Rule 3: fiat converts to the first accepted coin, else USDT; native pricing is its own coin.
    const coin = req.stableCoin ?? req.acceptedStableCoins?.[0] ?? StableCoin.USDT;
    const rate = req.currency === null ? null : fxRate(req.currency);
    const requestedUnits =
      rate === null
        ? req.amountCents * 10n ** BigInt(COIN_AMOUNT_DECIMALS - 2)
        : fiatCentsToCoinUnits(req.amountCents, rate, COIN_AMOUNT_DECIMALS);
    // Rule 4: strictly greater than 0.1 of the settlement coin (amount_cents of 0 or below too).
    if (requestedUnits <= FLOOR_UNITS) {
      throw apiError(50002, `amount must be greater than 0.1 ${stableCoinSymbol(coin)}`, {
        amount_coins: formatDecimalAmount(requestedUnits, COIN_AMOUNT_DECIMALS),
      });
    }
    // The bitmask: the request's list, else the store's setting (the spec's default USDT is the config default).
    const acceptedFlags = coinsToFlags(req.acceptedStableCoins ?? identity.store.accepted_stable_coins);

    const chain = firstChain();
    const now = world.clock.now();
    const record: IntentRecord = {
      id: newUniqueId(now),
      businessId: identity.businessId,
      storeId: identity.store.store_id,
      createdAt: now,
      request: req,
      coin,
      requestedUnits,
      rate,
      acceptedFlags,
      chainId: chain.chainId,
      coinContract: chain.tokens[stableCoinSymbol(coin)].address,
      txTo: await merchantWallet(chain, identity.store.store_id),
      status: CheckoutStatus.CREATED,
      history: [],
      errorMessage: null,
      txHash: null,
      txHash2: null,
      txFrom: null,
      actualPaid: null,
      serviceFee: null,
      netIncome: null,
      paymentMethodType: PaymentMethodType.UNKNOWN,
      payment: null,
      transactionId: null,
      webhookId: null,
      busy: false,
      cancelTimeout: null,
    };
    setStatus(record, CheckoutStatus.CREATED);
    intents.set(record.id, record);
    armTimeout(record, now);
    return {
      checkout_url: `${world.baseUrl().replace(/\/$/, '')}/checkout/${record.id}`,
      allsvc_checkout_intent_id: record.id,
      amount_coins: formatDecimalAmount(requestedUnits, COIN_AMOUNT_DECIMALS),
      stable_coin_type: coin,
      rate,
      accepted_stable_coins: acceptedFlags,
    };
  }

  const newUniqueId = (now: Date): string => {
    for (;;) {
      const id = newObjectId(now);
      if (!intents.has(id)) return id;
    }
  };

  function toWire(r: IntentRecord): CheckoutIntentWire {
    const fiat = r.request.currency;
    return {
      all_svc_checkout_intent_id: r.id,
      currency: fiat,
      currency_symbol: fiat === null ? null : currencyCode(fiat),
      amount_cents: fiat === null ? null : wireCents(r.request.amountCents),
      chain_id: r.chainId,
      amount_coins: formatDecimalAmount(r.requestedUnits, COIN_AMOUNT_DECIMALS),
      coin_symbol: stableCoinSymbol(r.coin),
      coin_contract: r.coinContract,
      currency_rate: r.rate,
      status: r.status,
      order_id: r.request.orderId,
      order_description: r.request.orderDescription,
      user_id: r.request.userId,
      user_name: r.request.userName,
      error_message: r.errorMessage,
      tx_hash: r.txHash,
      tx_hash_2: r.txHash2,
      tx_from: r.txFrom,
      tx_to: r.txTo,
      actual_paid_amount: r.actualPaid,
      service_fee_amount: r.serviceFee,
      net_income_amount: r.netIncome,
      payment_method_type: r.paymentMethodType,
      accepted_stable_coins: r.acceptedFlags,
    };
  }

  function toView(r: IntentRecord): SandboxIntentView {
    const p = r.payment;
    return {
      ...toWire(r),
      sandbox: {
        business_id: r.businessId,
        store_id: r.storeId,
        created_at: r.createdAt.toISOString(),
        redirect_url: r.request.redirectUrl,
        history: r.history.map((h) => ({ ...h })),
        payment: p && {
          route: p.route,
          outcome: p.outcome,
          chain_id: p.chainId,
          coin_symbol: p.symbol,
          buyer_wallet: p.buyer,
          temp_wallet: p.temp,
          merchant_wallet: p.merchant,
          mint_tx_hash: p.mintTxHash,
          refund_tx_hash: p.refundTxHash,
          held_in_temp_wallet: p.heldInTemp,
        },
        transaction_id: r.transactionId,
        webhook_id: r.webhookId,
      },
    };
  }

  // --- settlement steps (each moves real tokens, then records exactly what moved) ---

  const chainOf = (p: Payment): SandboxChain => {
    const chain = world.chains.get(p.chainId);
    if (!chain) throw new Error(`sandbox: chain ${p.chainId} disappeared`);
    return chain;
  };

  /** Temporary wallet -> merchant wallet, less the fee: ON_CHAIN, then CONFIRMED and the webhook. */
  async function sweepToMerchant(r: IntentRecord, p: Payment): Promise<void> {
    if (!p.tempLabel) throw new Error('sweep without a temporary wallet');
    // The fee is rounded down to a base unit: the service never keeps more than its rate.
    const fee = (p.gross * feeBps) / 10_000n;
    const net = p.gross - fee;
    setStatus(r, CheckoutStatus.ON_CHAIN, 'temporary wallet sweep to the merchant wallet broadcast');
    const sweep = await chainOf(p).transfer(p.symbol, p.tempLabel, p.merchant, net);
    p.heldInTemp = false;
    r.txHash2 = sweep.txHash;
    r.serviceFee = formatDecimalAmount(fee, p.decimals);
    r.netIncome = p.reportedNet ?? formatDecimalAmount(net, p.decimals);
    confirm(r, p);
  }

  function confirm(r: IntentRecord, p: Payment): void {
    r.errorMessage = null;
    setStatus(r, CheckoutStatus.CONFIRMED);
    r.transactionId = newObjectId(world.clock.now());
    const store = findStore(world, r.storeId)?.store;
    if (!store?.checkout_webhook_url) return;
    r.webhookId = randomUUID();
    world.webhooks.send({
      kind: 'checkout',
      storeId: r.storeId,
      webhookId: r.webhookId,
      payload: webhookPayload(r, p),
    });
  }

  function webhookPayload(r: IntentRecord, p: Payment): Record<string, unknown> {
    const fiat = r.request.currency;
    return {
      all_svc_transaction_id: r.transactionId,
      all_svc_checkout_intent_id: r.id,
      webhook_id: r.webhookId,
      // A bigint: the dispatcher writes it as a bare JSON integer, exactly as submitted.
      amount_cents: r.request.amountCents,
      currency: fiat,
      currency_symbol: fiat === null ? null : currencyCode(fiat),
      amount_coins: formatDecimalAmount(r.requestedUnits, COIN_AMOUNT_DECIMALS),
      coin_contract_address: r.coinContract,
      coin_symbol: p.symbol,
      chain_id: p.chainId,
      tx_hash: r.txHash,
      tx_from: r.txFrom,
      payment_method_type: r.paymentMethodType,
      user_id: r.request.userId,
      order_id: r.request.orderId,
      user_name: r.request.userName,
      extra_obj: r.request.extra,
      status: CheckoutStatus.CONFIRMED,
      actual_paid_amount: r.actualPaid,
    };
  }

  /**
   * SEND_BACK: the whole gross amount goes back to the buyer from where it sits (temporary
   * wallet, or the merchant wallet on a direct payment), then the final status. Nothing was
   * credited, so service_fee_amount and net_income_amount stay null.
   */
  async function sendBack(
    r: IntentRecord,
    p: Payment,
    final: CheckoutStatus,
    message: string,
  ): Promise<void> {
    setStatus(r, CheckoutStatus.SEND_BACK, message);
    const from = p.tempLabel ?? p.merchantLabel;
    const refund = await chainOf(p).transfer(p.symbol, from, p.buyer, p.gross);
    p.heldInTemp = false;
    p.refundTxHash = refund.txHash;
    r.errorMessage = message;
    setStatus(r, final, `refund ${refund.txHash}`);
  }

  /** Runs a settlement that moves funds; a chain failure leaves the intent FAILED, as the service would. */
  async function settle(r: IntentRecord, work: () => Promise<void>): Promise<SandboxIntentView> {
    r.busy = true;
    try {
      await work();
    } catch (err) {
      const message = coerceError(err).message;
      r.errorMessage = `sandbox chain failure: ${message}`;
      setStatus(r, CheckoutStatus.FAILED, r.errorMessage);
      throw new CheckoutControlError(500, `payment of ${r.id} failed on chain: ${message}`, { cause: err });
    } finally {
      r.busy = false;
    }
    return toView(r);
  }

  async function pay(id: string, request: PayRequest): Promise<SandboxIntentView> {
    const r = known(id);
    if (r.busy) throw new CheckoutControlError(409, `intent ${id} is already being settled`);
    if (!WAITING.has(r.status)) {
      throw new CheckoutControlError(
        409,
        `intent ${id} is ${checkoutStatusName(r.status)}; only CREATED or VIEWED intents can be paid`,
      );
    }
    const chainId = request.chainId ?? r.chainId;
    const chain = world.chains.get(chainId);
    if (!chain) {
      throw new CheckoutControlError(
        400,
        `chain_id ${chainId} is not simulated; simulated chains: ${[...world.chains.keys()].join(', ')}`,
      );
    }
    // Default coin: the intent's settlement coin, or (if the payer may not use it) the first in the bitmask.
    const coin =
      request.coin ??
      (flagsInclude(r.acceptedFlags, r.coin) ? r.coin : (flagsToCoins(r.acceptedFlags)[0] ?? r.coin));
    if (!flagsInclude(r.acceptedFlags, coin)) {
      throw new CheckoutControlError(
        400,
        `coin ${stableCoinSymbol(coin)} is not accepted by intent ${id} (accepted_stable_coins ${r.acceptedFlags})`,
      );
    }
    const symbol = stableCoinSymbol(coin);
    const decimals = chain.decimals;
    const requested = parseDecimalAmount(
      formatDecimalAmount(r.requestedUnits, COIN_AMOUNT_DECIMALS),
      decimals,
    );
    const route = request.route ?? 'temp_wallet';
    let gross: bigint;
    if (request.amount !== undefined) {
      try {
        gross = parseDecimalAmount(request.amount, decimals);
      } catch (err) {
        throw new CheckoutControlError(400, `amount: ${(err as Error).message}`);
      }
      if (gross <= 0n) throw new CheckoutControlError(400, 'amount must be greater than 0');
    } else {
      gross = request.outcome === 'underpaid' ? requested / 2n : requested;
    }
    const short = gross < requested && !request.acceptUnderpayment;
    const outcome = request.outcome ?? (short ? 'underpaid' : 'confirmed');
    if (outcome === 'confirmed' && short) {
      throw new CheckoutControlError(
        400,
        `amount ${formatDecimalAmount(gross, decimals)} is below the requested ${formatDecimalAmount(requested, decimals)}: use outcome "underpaid", or accept_underpayment`,
      );
    }
    if (outcome === 'underpaid' && gross >= requested) {
      throw new CheckoutControlError(
        400,
        `outcome "underpaid" needs an amount below the requested ${formatDecimalAmount(requested, decimals)}`,
      );
    }
    let reportedNet: string | null = null;
    if (request.reportedNetIncome !== undefined) {
      try {
        reportedNet = formatDecimalAmount(parseDecimalAmount(request.reportedNetIncome, decimals), decimals);
      } catch (err) {
        throw new CheckoutControlError(400, `reported_net_income: ${(err as Error).message}`);
      }
    }
    if ((outcome === 'rejected' || outcome === 'manual') && route === 'direct') {
      throw new CheckoutControlError(
        400,
        `outcome "${outcome}" is a KYT outcome: it needs route "temp_wallet" (a direct payment skips screening)`,
      );
    }

    return settle(r, async () => {
      r.cancelTimeout?.();
      r.cancelTimeout = null;
      const buyerLabel = `buyer:${r.id}`;
      const tempLabel = route === 'temp_wallet' ? `temp:${r.id}` : null;
      const merchantLabel = `merchant:${r.storeId}`;
      const [buyer, temp, merchant] = await Promise.all([
        chain.wallet(buyerLabel),
        tempLabel ? chain.wallet(tempLabel) : Promise.resolve(null),
        merchantWallet(chain, r.storeId),
      ]);
      // The intent now names what is being paid: chain, coin, its contract and the merchant wallet there.
      r.chainId = chainId;
      r.coin = coin;
      r.coinContract = chain.tokens[symbol].address;
      r.txTo = merchant;
      const minted = await chain.mint(symbol, buyer, gross);
      const p: Payment = {
        route,
        outcome,
        chainId,
        symbol,
        decimals,
        buyerLabel,
        buyer,
        tempLabel,
        temp,
        merchantLabel,
        merchant,
        mintTxHash: minted.txHash,
        gross,
        refundTxHash: null,
        heldInTemp: false,
        reportedNet,
      };
      r.payment = p;
      const deposit = await chain.transfer(symbol, buyerLabel, temp ?? merchant, gross);
      r.txHash = deposit.txHash;
      r.txFrom = buyer;
      r.actualPaid = formatDecimalAmount(gross, decimals);
      r.paymentMethodType = request.paymentMethodType ?? PaymentMethodType.WALLET_SCAN;

      if (route === 'direct') {
        setStatus(r, CheckoutStatus.ON_CHAIN, `buyer paid the merchant wallet directly (${deposit.txHash})`);
        if (outcome === 'underpaid') {
          await sendBack(
            r,
            p,
            CheckoutStatus.UNDERPAID,
            underpaidMessage(gross, requested, decimals, symbol),
          );
          return;
        }
        r.serviceFee = formatDecimalAmount(0n, decimals);
        r.netIncome = reportedNet ?? r.actualPaid;
        confirm(r, p);
        return;
      }
      p.heldInTemp = true;
      setStatus(
        r,
        CheckoutStatus.TEMP_WALLET_RECEIVED,
        `buyer paid the temporary wallet (${deposit.txHash})`,
      );
      switch (outcome) {
        case 'confirmed':
          await sweepToMerchant(r, p);
          return;
        case 'underpaid':
          await sendBack(
            r,
            p,
            CheckoutStatus.UNDERPAID,
            underpaidMessage(gross, requested, decimals, symbol),
          );
          return;
        case 'rejected':
          await sendBack(r, p, CheckoutStatus.REJECTED, 'rejected by KYT (transaction screening)');
          return;
        case 'manual':
          setStatus(r, CheckoutStatus.MANUAL_OPERATION, 'held in the temporary wallet for manual review');
          return;
      }
    });
  }

  async function forceStatus(id: string, status: CheckoutStatus): Promise<SandboxIntentView> {
    const r = known(id);
    if (r.busy)
      throw new CheckoutControlError(409, `intent ${id} is being settled; try again when it is done`);
    if (r.status === status) return toView(r);
    const p = r.payment;
    // Resolving a manual review settles the funds held in the temporary wallet.
    if (r.status === CheckoutStatus.MANUAL_OPERATION && p?.heldInTemp) {
      if (status === CheckoutStatus.CONFIRMED) return settle(r, () => sweepToMerchant(r, p));
      if (status === CheckoutStatus.REJECTED) {
        return settle(r, () =>
          sendBack(r, p, status, 'rejected by KYT (transaction screening) after manual review'),
        );
      }
      if (status === CheckoutStatus.UNDERPAID) {
        return settle(r, () =>
          sendBack(r, p, status, underpaidMessage(p.gross, requestedOn(r, p), p.decimals, p.symbol)),
        );
      }
    }
    if (status === CheckoutStatus.CONFIRMED) {
      throw new CheckoutControlError(
        409,
        `intent ${id} cannot be forced to CONFIRMED from ${checkoutStatusName(r.status)}: pay it (POST /_sandbox/intents/${id}/pay), ` +
          'or force CONFIRMED from MANUAL_OPERATION',
      );
    }
    setStatus(r, status, 'forced through the control API');
    if (WAITING.has(status)) armTimeout(r, world.clock.now());
    else {
      r.cancelTimeout?.();
      r.cancelTimeout = null;
    }
    return toView(r);
  }

  const requestedOn = (r: IntentRecord, p: Payment) =>
    parseDecimalAmount(formatDecimalAmount(r.requestedUnits, COIN_AMOUNT_DECIMALS), p.decimals);

  return {
    create,
    get: (identity, id) => toWire(owned(identity, id)),
    status: (identity, id) => owned(identity, id).status,
    view(id) {
      const r = isObjectId(id) ? intents.get(id) : undefined;
      if (!r) return undefined;
      if (r.status === CheckoutStatus.CREATED && !r.busy)
        setStatus(r, CheckoutStatus.VIEWED, 'hosted page opened');
      return toView(r);
    },
    peek(id) {
      const r = isObjectId(id) ? intents.get(id) : undefined;
      return r && toView(r);
    },
    inspect: (id) => toView(known(id)),
    pay,
    forceStatus,
    stop() {
      for (const r of intents.values()) {
        r.cancelTimeout?.();
        r.cancelTimeout = null;
      }
    },
  };
}

/**
 * amount_cents goes out as a JSON number because the envelope is written with JSON.stringify; the
 * value is exact, since the create rules refuse anything above 2^53 - 1.
 */
function wireCents(cents: bigint): number {
  if (cents > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('amount_cents beyond 2^53 - 1');
  return Number(cents);
}

function underpaidMessage(gross: bigint, requested: bigint, decimals: number, symbol: CoinSymbol): string {
  return `underpaid: received ${formatDecimalAmount(gross, decimals)} ${symbol}, required ${formatDecimalAmount(requested, decimals)} ${symbol}; sent back`;
}
