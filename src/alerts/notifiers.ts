import { createHmac } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { coerceError } from '../errors/coerceError.ts';
import type { AlertSeverity } from './conditions.ts';
import type { NotifierName } from './routes.ts';

/** One event of one alert, as every notifier receives it (before its own formatting). */
export interface AlertMessage {
  /** Stable per event: a receiver can drop a message it already has (delivery is at least once). */
  id: string;
  event: 'firing' | 'reminder' | 'resolved';
  key: string;
  severity: AlertSeverity;
  title: string;
  text: string;
  labels: Record<string, string>;
  first_fired_at: string;
  resolved_at: string | null;
  sent_at: string;
}

export interface Notifier {
  name: NotifierName;
  /** One attempt; throws on anything but a 2xx answer. */
  send(message: AlertMessage): Promise<void>;
}

export class NotifierError extends Error {
  override name = 'NotifierError';
  constructor(
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const TIMEOUT_MS = 10_000;

/**
 * The signature header of the generic webhook: HMAC-SHA256 under ALERT_WEBHOOK_SECRET over
 * `<timestamp>.<raw body>`, hex, as `sha256=<hex>`; the timestamp (Unix seconds) goes in
 * X-Stablebooks-Timestamp so a receiver can refuse stale replays.
 */
export function signAlertBody(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The generic JSON webhook (ALERT_WEBHOOK_URL), signed with ALERT_WEBHOOK_SECRET. */
export function createWebhookNotifier(options: { url: string; secret: string; clock: Clock }): Notifier {
  return {
    name: 'webhook',
    async send(message) {
      const body = JSON.stringify(message);
      const timestamp = Math.floor(options.clock.now().getTime() / 1000);
      await post(options.url, body, {
        'X-Stablebooks-Timestamp': String(timestamp),
        'X-Stablebooks-Signature': signAlertBody(options.secret, timestamp, body),
      });
    },
  };
}

/** A Slack-compatible incoming webhook (ALERT_SLACK_WEBHOOK_URL): `{"text": ...}`. */
export function createSlackNotifier(options: { url: string }): Notifier {
  return {
    name: 'slack',
    async send(message) {
      await post(options.url, JSON.stringify({ text: slackText(message) }), {});
    },
  };
}

export function slackText(message: AlertMessage): string {
  const head =
    message.event === 'resolved'
      ? `RESOLVED [${message.severity}]`
      : message.event === 'reminder'
        ? `STILL FIRING [${message.severity}]`
        : `FIRING [${message.severity}]`;
  return `*${head}* ${message.title}\n${message.text}`;
}

/**
 * One POST of a JSON body; throws a NotifierError (naming the host only) on anything but a 2xx.
 * Also the outbound events' delivery (src/events/deliverEvents.ts).
 */
export async function post(url: string, body: string, headers: Record<string, string>): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    // The URL itself may carry a token (Slack's do): the message names the host only.
    throw new NotifierError(`POST to ${new URL(url).host} failed: ${describe(err)}`, undefined, {
      cause: err,
    });
  }
  await response.body?.cancel().catch(() => {});
  if (!response.ok) {
    throw new NotifierError(`POST to ${new URL(url).host} answered ${response.status}`, response.status);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

export interface RetryOptions {
  /** Attempts per notifier per run (the message stays pending for the next run after the last). */
  attempts: number;
  /** First backoff; doubles each attempt. */
  baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { attempts: 3, baseDelayMs: 1000 };

/**
 * Sends with bounded exponential backoff. Calls onRetry before each new attempt; returns the last
 * error when every attempt failed (never throws: a notifier that stays down must not stop the job).
 */
export async function sendWithRetry(
  notifier: Notifier,
  message: AlertMessage,
  retry: RetryOptions,
  onRetry: (err: Error, attempt: number) => void,
): Promise<Error | undefined> {
  let last: Error | undefined;
  for (let attempt = 1; attempt <= retry.attempts; attempt++) {
    try {
      await notifier.send(message);
      return undefined;
    } catch (err) {
      last = coerceError(err);
      if (attempt < retry.attempts) {
        onRetry(last, attempt);
        await new Promise((r) => setTimeout(r, retry.baseDelayMs * 2 ** (attempt - 1)));
      }
    }
  }
  return last;
}

/** The configured notifiers, by name. */
export function createNotifiers(options: {
  webhookUrl?: string | undefined;
  webhookSecret?: string | undefined;
  slackWebhookUrl?: string | undefined;
  clock: Clock;
}): Notifier[] {
  const notifiers: Notifier[] = [];
  if (options.webhookUrl && options.webhookSecret) {
    notifiers.push(
      createWebhookNotifier({ url: options.webhookUrl, secret: options.webhookSecret, clock: options.clock }),
    );
  }
  if (options.slackWebhookUrl) notifiers.push(createSlackNotifier({ url: options.slackWebhookUrl }));
  return notifiers;
}
