import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';

/**
 * The daemon's environment variables (README.md, "Configuration"), parsed once at start. Nothing else in
 * the code reads process.env: the parsed Config is passed down.
 */
const postgresUrl = urlOf(/^postgres(ql)?:$/, 'must be a postgres:// URL');
const redisUrl = urlOf(/^rediss?:$/, 'must be a redis:// or rediss:// URL');
const httpUrl = urlOf(/^https?:$/, 'must be an http(s) URL');

/**
 * A URL whose scheme matches `protocol`. A bad value is one issue saying what it must be and what
 * it got (not a URL, or its scheme only): never the value, which may hold a password, and never
 * an exception (`new URL()` throws, which used to escape the parse as a bare "Invalid URL").
 */
function urlOf(protocol: RegExp, mustBe: string) {
  return z.string().check((ctx) => {
    const url = URL.canParse(ctx.value) ? new URL(ctx.value) : undefined;
    if (url && protocol.test(url.protocol)) return;
    const got = url ? `a URL with scheme ${url.protocol}` : 'something that is not a URL';
    ctx.issues.push({ code: 'custom', message: `${mustBe} (got ${got})`, input: ctx.value });
  });
}

export const envFields = {
  /** PostgreSQL holding the ledger, facts and findings. */
  DATABASE_URL: postgresUrl,
  /**
   * `stablebooks migrate` only: the PostgreSQL role the daemon runs as (the user of `start`'s
   * DATABASE_URL). Migrate, run as the schema's owner, grants it what the daemon needs and
   * nothing more (src/db/runtimeGrants.ts). Unset: no grants (everything runs as one role).
   */
  RUNTIME_ROLE: z
    .string()
    .regex(
      /^[a-z_][a-z0-9_]{0,62}$/,
      'must be a PostgreSQL role name: lower-case letters, digits and _, at most 63, not starting with a digit',
    )
    .optional(),
  /** Redis for BullMQ queues, schedules, rate limits and nonce caches. */
  REDIS_URL: redisUrl,
  /** Base address of the Merchant Payments Service (or the sandbox). */
  SVC_BASE_URL: httpUrl,
  /** The public HTTP port: the webhook routes (and /healthz) only. */
  PORT: z.coerce.number().int().min(1).max(65535).default(8080),
  /** The operations port: /metrics, /healthz, /readyz, /admin/queues. Never expose it publicly. */
  OPS_PORT: z.coerce.number().int().min(1).max(65535).default(8081),
  /** Address the operations port binds to; 127.0.0.1 keeps it on this machine (0.0.0.0 in a container). */
  OPS_HOST: z.string().min(1).default('127.0.0.1'),
  /** Let /admin/queues change jobs (retry, remove, clean): off by default, the dashboard is read-only. */
  ADMIN_WRITE: z
    .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  /**
   * When the admin session cookie is Secure: `auto`, when the browser came over https (a proxy's
   * X-Forwarded-Proto or Forwarded saying so counts); `always`, whatever the request says.
   */
  ADMIN_COOKIE_SECURE: z.enum(['auto', 'always'], { message: 'must be auto or always' }).default('auto'),
  /** Milliseconds a new PostgreSQL connection may take before the attempt fails. */
  PG_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  /** Milliseconds any one SQL statement may run before PostgreSQL cancels it. */
  PG_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  /** Milliseconds a request's headers and body may take to arrive on either HTTP port; then 408 and closed. */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /** Milliseconds a request's headers may take to arrive; at most HTTP_REQUEST_TIMEOUT_MS. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(500).max(600_000).default(10_000),
  /**
   * Milliseconds an idle keep-alive connection stays open. Behind a load balancer keep it longer
   * than the balancer's own idle timeout, or it may reuse a connection just as it closes (a 502).
   */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(72_000),
  /** Connections each HTTP port keeps open at most; past it the oldest is closed. */
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(10).max(1_000_000).default(1_000),
  /** Webhooks the intake may hold while it waits for PostgreSQL; beyond that it answers 503. */
  INTAKE_QUEUE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(5_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** JSON file listing the merchant's stores (see src/config/stores.ts). */
  STORES_FILE: z.string().min(1),
  /** 32 random bytes, base64: encrypts claim URLs at rest (AES-256-GCM). */
  ENCRYPTION_KEY: z
    .string()
    .refine((s) => /^[A-Za-z0-9+/]+={0,2}$/.test(s) && Buffer.from(s, 'base64').length === 32, {
      message: 'must be 32 bytes, base64 encoded (make one with: openssl rand -base64 32)',
    }),
  /** Bearer token for /admin/queues; the admin routes are off when unset. */
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Bearer token of the read API (/api/v1 on the operations port); the API is off when unset. */
  API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Where outbound events (payment booked, payout settled, findings) are POSTed; optional. */
  EVENTS_WEBHOOK_URL: httpUrl.optional(),
  /** HMAC-SHA256 key signing every outbound event; required with EVENTS_WEBHOOK_URL. A secret. */
  EVENTS_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Where alert notifications are POSTed (generic or Slack-compatible webhook). */
  ALERT_WEBHOOK_URL: httpUrl.optional(),
  /** HMAC-SHA256 key signing every alert POSTed to ALERT_WEBHOOK_URL; required with it. A secret. */
  ALERT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** A Slack-compatible incoming webhook (`{"text": ...}`) for alerts; optional. Its URL is a secret. */
  ALERT_SLACK_WEBHOOK_URL: httpUrl.optional(),
  /** Optional JSON file: which notifiers each severity goes to (src/alerts/routes.ts); default all. */
  ALERT_ROUTES_FILE: z.string().min(1).optional(),
  /** Minutes between reminders while an alert keeps firing. */
  ALERT_REMIND_MINUTES: z.coerce
    .number()
    .positive()
    .max(7 * 24 * 60)
    .default(60),
  /** Blocks the transfer indexer may trail the chain head before the chain-lag alert fires. */
  ALERT_CHAIN_LAG_BLOCKS: z.coerce.number().int().positive().default(50),
  /** Optional JSON file overriding the chain registry: token contracts, decimals, finality (src/config/chainRegistry.ts). */
  CHAINS_FILE: z.string().min(1).optional(),
  /** Intent status polls per second allowed per API key, shared by every process (BullMQ limiter). */
  POLLS_PER_SECOND: z.coerce.number().positive().max(1000).default(5),
  /**
   * Multiplies every poll and sweep interval: 1 in production; the demo and tests run faster.
   */
  POLL_INTERVAL_SCALE: z.coerce.number().positive().max(100).default(1),
  /** Prefix of every Redis key of the queues; several installations (or test runs) can share one Redis. */
  QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only')
    .default('stablebooks'),
  /**
   * Follow this clock (an URL answering {"now": ISO time}, the sandbox's /_sandbox/clock) instead
   * of the system clock: for the demo and end-to-end tests, never in production.
   */
  CLOCK_URL: httpUrl.optional(),
  /**
   * Hours a cancelled or expired claim link may wait for its refund before it becomes a
   * refund_overdue / expiry_refund_overdue finding.
   */
  REFUND_GRACE_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 365)
    .default(24),
  /** Folder for reconciliation reports. */
  REPORTS_DIR: z.string().min(1).default('./reports'),
  /** Cron (UTC) of the scheduled reconciliation run; default daily at 01:00 for the previous UTC day. */
  RECON_CRON: z
    .string()
    .check((ctx) => {
      const problem = cronProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
    })
    .default('0 1 * * *'),
  /** Minutes a confirmed payment may wait in assets:in_transit for its chain proof (clearing check). */
  RECON_IN_TRANSIT_MINUTES: z.coerce
    .number()
    .positive()
    .max(60 * 24 * 30)
    .default(60),
  /** Minutes after confirmation by which its checkout webhook must have arrived (missing_webhook). */
  RECON_WEBHOOK_MINUTES: z.coerce
    .number()
    .positive()
    .max(60 * 24 * 30)
    .default(60),
  /** Hours an intent may stay non-terminal (CREATED … MANUAL_OPERATION) before it is stuck_intent. */
  RECON_STUCK_HOURS: z.coerce
    .number()
    .positive()
    .max(24 * 365)
    .default(24),
  /** Base units two sources may differ by and still match (0: exact). */
  RECON_AMOUNT_TOLERANCE: z
    .string()
    .regex(/^\d{1,30}$/, 'must be a whole number of base units, e.g. 0')
    .default('0'),
} as const;

export const envSchema = z.object(envFields);

/**
 * Why `expression` is not a cron expression the scheduler can run, or undefined. Read by
 * cron-parser, the parser BullMQ's job scheduler uses, so what passes here schedules there; 5 or
 * 6 fields only (cron-parser would fill in a missing field, and take "@daily" aliases).
 */
function cronProblem(expression: string): string | undefined {
  const mustBe = 'must be a cron expression of 5 or 6 fields (UTC), e.g. "0 1 * * *"';
  const fields = expression.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `${mustBe}: it has ${fields} field${fields === 1 ? '' : 's'}`;
  try {
    CronExpressionParser.parse(expression, { tz: 'UTC' });
    return undefined;
  } catch (err) {
    return `${mustBe}: ${err instanceof Error ? err.message : String(err)}`;
  }
}
export type Env = z.output<typeof envSchema>;

/** RPC_URL_<EIP-155 chain id>: one or more comma-separated URLs, used as a viem fallback transport. */
export function parseRpcUrls(env: Record<string, string | undefined>): {
  urls: Map<number, string[]>;
  problems: string[];
} {
  const urls = new Map<number, string[]>();
  const problems: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    const match = /^RPC_URL_(\d+)$/.exec(key);
    if (!match || value === undefined) continue;
    const list = value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = list.filter((u) => !httpUrl.safeParse(u).success && !/^wss?:\/\//.test(u));
    if (list.length === 0) problems.push(`${key}: is empty; give one or more comma-separated RPC URLs`);
    else if (bad.length > 0) problems.push(`${key}: ${bad.length} entry is not an http(s) or ws(s) URL`);
    else urls.set(Number(match[1]), list);
  }
  return { urls, problems };
}
