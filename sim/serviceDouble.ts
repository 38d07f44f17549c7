import { formatDecimalAmount } from '../src/money/decimalAmount.ts';
import type { SvcClient } from '../src/svc/client.ts';
import { SvcApiError, SvcRateLimitError, SvcTransportError } from '../src/svc/errors.ts';
import { type CheckoutIntent, checkoutIntentSchema } from '../src/svc/models/checkoutIntent.ts';
import { CheckoutStatus } from '../src/svc/models/checkoutStatus.ts';
import { SIM_CHAIN_ID, type SimIntent, type World } from './world.ts';

/**
 * The service as the world says it behaves, behind the product's own SvcClient interface: an
 * intent read at time t answers its state at t minus the read's lag (a read side lagging behind),
 * or a 5xx the caller retries. Answers go through the service model's zod schema, as the real
 * client's do. Only the calls the booking code makes are answered.
 */
export interface ReadFaults {
  /** How far behind the world this read is (ms). */
  lagMs: number;
  /** The read fails: a gateway's 5xx or 429 (both retryable). */
  fail: false | '5xx' | '429';
}

export interface ServiceDouble {
  client(storeId: string, now: () => number, faults: () => ReadFaults): SvcClient;
  /** The body of the webhook the service sends about an intent at time t (its state then), as JSON. */
  webhookAt(intent: SimIntent, t: number, webhookId: string): Record<string, unknown> | null;
  /** The intent's state at time t, or undefined before it exists. */
  stateAt(intent: SimIntent, t: number): CheckoutIntent | undefined;
}

export function createServiceDouble(world: World): ServiceDouble {
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
    const fmt = (units: bigint) => formatDecimalAmount(units, d);
    return checkoutIntentSchema.parse({
      all_svc_checkout_intent_id: intent.id,
      currency: null,
      currency_symbol: null,
      amount_cents: null,
      chain_id: SIM_CHAIN_ID,
      amount_coins: fmt(intent.R),
      coin_symbol: intent.token.symbol,
      coin_contract: intent.token.address,
      currency_rate: null,
      status: now.status,
      order_id: `order-${intent.id.slice(0, 8)}`,
      order_description: null,
      user_id: null,
      user_name: null,
      error_message: null,
      tx_hash: paid ? intent.tx1 : null,
      tx_hash_2: confirmed ? intent.tx2 : null,
      tx_from: paid ? intent.payer : null,
      tx_to: merchantOf.get(intent.storeId),
      actual_paid_amount: decided ? fmt(intent.P) : null,
      service_fee_amount: confirmed ? fmt(intent.F) : null,
      net_income_amount: confirmed ? fmt(intent.P - intent.F) : null,
      payment_method_type: 1,
      accepted_stable_coins: null,
    });
  };

  return {
    stateAt,
    webhookAt(intent, t, webhookId) {
      const state = stateAt(intent, t);
      if (!state?.tx_hash || !state.tx_from || !state.coin_contract || state.chain_id === null) return null;
      return {
        all_svc_transaction_id: `txn-${intent.id}`,
        all_svc_checkout_intent_id: intent.id,
        webhook_id: webhookId,
        amount_cents: 0,
        currency: null,
        currency_symbol: null,
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
    client(storeId, now, faults) {
      const read = (endpoint: string, id: string): CheckoutIntent => {
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
        createClaimLinkAutoPayout: unsupported('createClaimLinkAutoPayout'),
        cancelClaimLinkAutoPayout: unsupported('cancelClaimLinkAutoPayout'),
        getCheckoutIntent: async (id) => read('checkout_intents.get', id),
        getCheckoutIntentStatus: async (id) => read('checkout_intents.status', id).status,
      };
    },
  };
}
