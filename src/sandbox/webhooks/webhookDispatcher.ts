import { coerceError } from '../../errors/coerceError.ts';
import { stringifyJson } from '../../svc/json.ts';
import { signWebhook } from '../../svc/signing/webhookSignature.ts';
import type { Faults } from '../faults.ts';
import type { SandboxClock } from '../sandboxClock.ts';
import type { SandboxConfig } from '../sandboxConfig.ts';
import type { WebhookDelivery, WebhookDispatcher } from './types.ts';

/** Seconds after each failed attempt before the next one, on the sandbox clock; then it gives up. */
export const RETRY_SCHEDULE_SECONDS = [10, 30, 60, 300, 900, 3600, 3 * 3600, 6 * 3600] as const;
const ATTEMPT_TIMEOUT_MS = 10_000;

/**
 * Delivers the service's webhooks as the spec describes them: POST with the JSON body, signed
 * with the store's api_secret over the eight-line canonical string (path and query of the store's
 * URL), a fresh timestamp and nonce per attempt, the same X-Webhook-Id every time; retried on any
 * answer other than 200. Faults (duplicate, delay, reorder, drop) come from /_sandbox/faults.
 */
export function createWebhookDispatcher(deps: {
  config: SandboxConfig;
  clock: SandboxClock;
  faults: Faults;
}): WebhookDispatcher {
  const log = new Map<string, WebhookDelivery>();
  const held: WebhookDelivery[] = [];
  let stopped = false;

  const storeOf = (storeId: string) => {
    for (const b of deps.config.businesses) {
      const s = b.stores.find((x) => x.store_id === storeId);
      if (s) return s;
    }
    return undefined;
  };

  async function attempt(delivery: WebhookDelivery, duplicate = false): Promise<void> {
    if (stopped) return;
    const store = storeOf(delivery.storeId);
    if (!store) return;
    const url = new URL(delivery.url);
    const headers = signWebhook({
      secret: store.api_secret,
      method: 'POST',
      path: url.pathname,
      query: url.search.replace(/^\?/, ''),
      webhookId: delivery.webhookId,
      body: delivery.body,
      clock: deps.clock,
    });
    const record = {
      at: deps.clock.now().toISOString(),
      status: null as number | null,
      error: null as string | null,
      responseBody: null as string | null,
      duplicate,
    };
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-API-Key': store.api_key, ...headers },
        body: delivery.body,
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
        redirect: 'manual',
      });
      record.status = res.status;
      record.responseBody = (await res.text()).slice(0, 500);
    } catch (err) {
      record.error = coerceError(err).message;
    }
    delivery.attempts.push(record);
    if (duplicate) return;
    if (record.status === 200) {
      delivery.state = 'delivered';
      delivery.nextAttemptAt = null;
      return;
    }
    const failures = delivery.attempts.filter((a) => !a.duplicate).length;
    const wait = RETRY_SCHEDULE_SECONDS[failures - 1];
    if (wait === undefined) {
      delivery.state = 'failed';
      delivery.nextAttemptAt = null;
      return;
    }
    const next = new Date(deps.clock.now().getTime() + wait * 1000);
    delivery.nextAttemptAt = next.toISOString();
    deps.clock.at(next, () => (delivery.state === 'pending' ? attempt(delivery) : undefined));
  }

  function dispatch(delivery: WebhookDelivery): void {
    const f = deps.faults;
    if (f.webhookDropNext > 0) {
      f.webhookDropNext--;
      delivery.state = 'dropped';
      return;
    }
    const duplicate = f.webhookDuplicate > 0;
    if (duplicate) f.webhookDuplicate--;
    const run = async () => {
      await attempt(delivery);
      if (duplicate) await attempt(delivery, true);
    };
    if (f.webhookDelayMs > 0) {
      const at = new Date(deps.clock.now().getTime() + f.webhookDelayMs);
      delivery.nextAttemptAt = at.toISOString();
      deps.clock.at(at, run);
    } else {
      deps.clock.after(0, run);
    }
  }

  return {
    send({ kind, storeId, webhookId, payload }) {
      const store = storeOf(storeId);
      const url = kind === 'checkout' ? store?.checkout_webhook_url : store?.claim_link_webhook_url;
      if (!store || !url) return;
      const delivery: WebhookDelivery = {
        webhookId,
        kind,
        storeId,
        url,
        body: stringifyJson(payload),
        state: 'pending',
        attempts: [],
        nextAttemptAt: deps.clock.now().toISOString(),
      };
      log.set(webhookId, delivery);
      if (deps.faults.webhookReorder > 0) {
        // Hold this many, then send them newest first.
        held.push(delivery);
        if (held.length >= deps.faults.webhookReorder) {
          deps.faults.webhookReorder = 0;
          for (const d of held.splice(0).reverse()) dispatch(d);
        }
        return;
      }
      dispatch(delivery);
    },
    list: () => [...log.values()],
    async redeliver(webhookId) {
      const delivery = log.get(webhookId);
      if (!delivery) return undefined;
      delivery.state = 'pending';
      await attempt(delivery);
      return delivery;
    },
    stop() {
      stopped = true;
    },
  };
}
