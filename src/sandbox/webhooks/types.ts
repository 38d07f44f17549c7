/** One delivery attempt of a webhook, as GET /_sandbox/webhooks shows it. */
export interface WebhookAttempt {
  at: string;
  /** HTTP status of the receiver's answer, or null when there was none (network error, timeout). */
  status: number | null;
  error: string | null;
  /** The first 500 characters of the receiver's answer. */
  responseBody: string | null;
  duplicate: boolean;
}

export interface WebhookDelivery {
  webhookId: string;
  kind: 'checkout' | 'claim_link.cancelled';
  storeId: string;
  url: string;
  /** The exact body bytes, as sent on every attempt. */
  body: string;
  state: 'pending' | 'delivered' | 'failed' | 'dropped';
  attempts: WebhookAttempt[];
  nextAttemptAt: string | null;
}

export interface WebhookDispatcher {
  /**
   * Queues a webhook for a store: the payload is serialised once, signed per attempt (fresh
   * timestamp and nonce), and retried on any non-200 on the sandbox clock. `webhookId` is
   * both X-Webhook-Id and, for checkout webhooks, the payload's webhook_id.
   */
  send(args: {
    kind: WebhookDelivery['kind'];
    storeId: string;
    webhookId: string;
    payload: Record<string, unknown>;
  }): void;
  list(): WebhookDelivery[];
  /** Sends a logged webhook again now (same body and webhook_id, new signature). */
  redeliver(webhookId: string): Promise<WebhookDelivery | undefined>;
  /** Resolves when no delivery is waiting to be attempted before the given sandbox time (tests). */
  stop(): void;
}
