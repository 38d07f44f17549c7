import type { z } from 'zod';
import { type AlertRoutes, loadAlertRoutes } from '../alerts/routes.ts';
import { type ChainRegistry, createChainRegistry, loadChainsFile } from './chainRegistry.ts';
import { type Env, envFields, envSchema, parseRpcUrls } from './env.ts';
import { ConfigError } from './errors.ts';
import { loadStores, type StoreConfig } from './stores.ts';

/** Everything the daemon is configured with, parsed once at start and passed down. */
export interface Config {
  databaseUrl: string;
  redisUrl: string;
  svcBaseUrl: string;
  /** Public port: webhooks. */
  port: number;
  /** Operations port and bind address: metrics, health, admin. */
  opsPort: number;
  opsHost: string;
  /** Whether /admin/queues may change jobs; read-only otherwise. */
  adminWrite: boolean;
  /** When the admin session cookie is Secure (ADMIN_COOKIE_SECURE). */
  adminCookieSecure: 'auto' | 'always';
  pgConnectTimeoutMs: number;
  pgStatementTimeoutMs: number;
  /** Timeouts and the connection cap of both HTTP ports (HTTP_*). */
  http: HttpLimits;
  /** Webhooks the intake may hold waiting for storage before it answers 503. */
  intakeQueueLimit: number;
  logLevel: Env['LOG_LEVEL'];
  stores: StoreConfig[];
  /** EIP-155 chain id -> RPC URLs, in fallback order. */
  rpcUrls: Map<number, string[]>;
  /** Accepted tokens and finality per chain: defaults plus CHAINS_FILE. */
  chains: ChainRegistry;
  /** 32 bytes; a secret. */
  encryptionKey: Buffer;
  adminToken: string | undefined;
  /** Bearer token of the read API; the API is off when undefined. A secret. */
  apiToken: string | undefined;
  /** Outbound events: where they go and the key that signs them (a secret); both or neither. */
  eventsWebhookUrl: string | undefined;
  eventsWebhookSecret: string | undefined;
  alertWebhookUrl: string | undefined;
  /** Signs the alerts POSTed to alertWebhookUrl (set whenever it is); a secret. */
  alertWebhookSecret: string | undefined;
  /** Slack-compatible incoming webhook for alerts; a secret (the URL is the credential). */
  alertSlackWebhookUrl: string | undefined;
  /** ALERT_ROUTES_FILE parsed: notifiers per severity; undefined sends every alert everywhere. */
  alertRoutes: AlertRoutes | undefined;
  /** ALERT_REMIND_MINUTES in ms. */
  alertRemindMs: number;
  alertChainLagBlocks: number;
  reportsDir: string;
  reconCron: string;
  /** Windows and tolerance of the reconciliation checks (RECON_*). */
  recon: ReconSettings;
  pollsPerSecond: number;
  pollIntervalScale: number;
  queuePrefix: string;
  /** REFUND_GRACE_HOURS in ms: how long a cancelled or expired claim link may wait for its refund. */
  refundGraceMs: number;
  /** Follow this clock instead of the system's (the sandbox's, for the demo and tests). */
  clockUrl?: string;
}

export interface HttpLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxConnections: number;
}

type HttpEnv = Pick<
  Env,
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
  | 'HTTP_MAX_CONNECTIONS'
>;

function httpLimitsOf(e: HttpEnv): HttpLimits {
  return {
    requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
    headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: e.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: e.HTTP_MAX_CONNECTIONS,
  };
}

/** The HTTP_* settings at their defaults, for a Config built in code (the demo, benchmarks). */
export const defaultHttpLimits: HttpLimits = httpLimitsOf({
  HTTP_REQUEST_TIMEOUT_MS: envFields.HTTP_REQUEST_TIMEOUT_MS.parse(undefined),
  HTTP_HEADERS_TIMEOUT_MS: envFields.HTTP_HEADERS_TIMEOUT_MS.parse(undefined),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: envFields.HTTP_KEEP_ALIVE_TIMEOUT_MS.parse(undefined),
  HTTP_MAX_CONNECTIONS: envFields.HTTP_MAX_CONNECTIONS.parse(undefined),
});

export interface ReconSettings {
  inTransitWindowMs: number;
  webhookWindowMs: number;
  stuckMs: number;
  /** Base units. */
  amountTolerance: bigint;
}

type RawEnv = Record<string, string | undefined>;

/**
 * The configuration as far as it goes: every problem, and each part that is usable on its own even
 * when others are not, so that `stablebooks doctor` can still check the database when REDIS_URL is
 * wrong (and the other way round).
 */
export interface ConfigInspection {
  /** One line per bad or missing variable, naming it; empty exactly when `config` is set. */
  problems: string[];
  config: Config | undefined;
  usable: {
    databaseUrl: string | undefined;
    redisUrl: string | undefined;
    svcBaseUrl: string | undefined;
    /** The stores of STORES_FILE whose secret is set (none when the file itself is bad). */
    stores: StoreConfig[];
    /** The RPC_URL_<id> variables that parsed. */
    rpcUrls: Map<number, string[]>;
    /** Undefined when CHAINS_FILE is bad: its tokens are unknown, the defaults would mislead. */
    chains: ChainRegistry | undefined;
  };
}

/**
 * Parses the whole environment, collecting every problem (one line each) before failing, so a
 * person fixes them all in one go rather than one per restart.
 */
export function loadConfig(env: RawEnv): Config {
  const inspection = inspectConfig(env);
  if (!inspection.config) throw new ConfigError(inspection.problems);
  return inspection.config;
}

/** loadConfig without the throw: the problems, the Config when there are none, the usable parts. */
export function inspectConfig(env: RawEnv): ConfigInspection {
  const problems: string[] = [];
  const parsed = envSchema.safeParse(blankAsMissing(env));
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push(problemOf(String(issue.path[0] ?? '?'), issue, env));
  }
  const rpc = parseRpcUrls(env);
  problems.push(...rpc.problems);
  const storesFile = env.STORES_FILE;
  const stores = storesFile ? loadStores(storesFile, env) : { stores: [], problems: [] };
  problems.push(...stores.problems);
  const chainsFile = env.CHAINS_FILE ? loadChainsFile(env.CHAINS_FILE) : { chains: [], problems: [] };
  problems.push(...chainsFile.problems);
  for (const store of stores.stores) {
    for (const chainId of store.wallets.keys()) {
      if (!rpc.urls.has(chainId)) {
        problems.push(
          `RPC_URL_${chainId}: is required because store ${store.storeId} has wallets on chain ${chainId}`,
        );
      }
    }
  }
  const routesFile = env.ALERT_ROUTES_FILE ? loadAlertRoutes(env.ALERT_ROUTES_FILE) : undefined;
  problems.push(...(routesFile?.problems ?? []));
  if (env.ALERT_WEBHOOK_URL && !env.ALERT_WEBHOOK_SECRET) {
    problems.push(
      'ALERT_WEBHOOK_SECRET: is required because ALERT_WEBHOOK_URL is set (make one with: openssl rand -hex 32)',
    );
  }
  if (env.EVENTS_WEBHOOK_URL && !env.EVENTS_WEBHOOK_SECRET) {
    problems.push(
      'EVENTS_WEBHOOK_SECRET: is required because EVENTS_WEBHOOK_URL is set (make one with: openssl rand -hex 32)',
    );
  }
  // Node refuses to start a server whose headers may take longer than the whole request.
  if (parsed.success && parsed.data.HTTP_HEADERS_TIMEOUT_MS > parsed.data.HTTP_REQUEST_TIMEOUT_MS) {
    problems.push(
      `HTTP_HEADERS_TIMEOUT_MS: must be at most HTTP_REQUEST_TIMEOUT_MS (${parsed.data.HTTP_REQUEST_TIMEOUT_MS}): the headers are part of the request`,
    );
  }
  const chains = chainsFile.problems.length === 0 ? createChainRegistry(chainsFile.chains) : undefined;
  const usable = {
    databaseUrl: fieldValue(env, 'DATABASE_URL'),
    redisUrl: fieldValue(env, 'REDIS_URL'),
    svcBaseUrl: fieldValue(env, 'SVC_BASE_URL'),
    stores: stores.stores,
    rpcUrls: rpc.urls,
    chains,
  };
  if (problems.length > 0 || !parsed.success || !chains) return { problems, config: undefined, usable };
  const e = parsed.data;
  const config: Config = {
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    svcBaseUrl: e.SVC_BASE_URL,
    port: e.PORT,
    opsPort: e.OPS_PORT,
    opsHost: e.OPS_HOST,
    adminWrite: e.ADMIN_WRITE,
    adminCookieSecure: e.ADMIN_COOKIE_SECURE,
    pgConnectTimeoutMs: e.PG_CONNECT_TIMEOUT_MS,
    pgStatementTimeoutMs: e.PG_STATEMENT_TIMEOUT_MS,
    http: httpLimitsOf(e),
    intakeQueueLimit: e.INTAKE_QUEUE_LIMIT,
    logLevel: e.LOG_LEVEL,
    stores: stores.stores,
    rpcUrls: rpc.urls,
    chains,
    encryptionKey: Buffer.from(e.ENCRYPTION_KEY, 'base64'),
    adminToken: e.ADMIN_TOKEN,
    apiToken: e.API_TOKEN,
    eventsWebhookUrl: e.EVENTS_WEBHOOK_URL,
    eventsWebhookSecret: e.EVENTS_WEBHOOK_SECRET,
    alertWebhookUrl: e.ALERT_WEBHOOK_URL,
    alertWebhookSecret: e.ALERT_WEBHOOK_SECRET,
    alertSlackWebhookUrl: e.ALERT_SLACK_WEBHOOK_URL,
    alertRoutes: routesFile?.routes,
    alertRemindMs: Math.round(e.ALERT_REMIND_MINUTES * 60_000),
    alertChainLagBlocks: e.ALERT_CHAIN_LAG_BLOCKS,
    reportsDir: e.REPORTS_DIR,
    reconCron: e.RECON_CRON,
    recon: {
      inTransitWindowMs: Math.round(e.RECON_IN_TRANSIT_MINUTES * 60_000),
      webhookWindowMs: Math.round(e.RECON_WEBHOOK_MINUTES * 60_000),
      stuckMs: Math.round(e.RECON_STUCK_HOURS * 3_600_000),
      amountTolerance: BigInt(e.RECON_AMOUNT_TOLERANCE),
    },
    pollsPerSecond: e.POLLS_PER_SECOND,
    pollIntervalScale: e.POLL_INTERVAL_SCALE,
    queuePrefix: e.QUEUE_PREFIX,
    refundGraceMs: Math.round(e.REFUND_GRACE_HOURS * 3_600_000),
    clockUrl: e.CLOCK_URL,
  };
  return { problems, config, usable };
}

/** For commands that only touch the database. */
export function loadDatabaseUrl(env: RawEnv): string {
  return loadField(env, 'DATABASE_URL');
}

/**
 * `stablebooks migrate`'s settings: the owner's DATABASE_URL and the daemon's role to grant
 * (RUNTIME_ROLE, optional); both problems at once when both are bad.
 */
export function loadMigrateSettings(env: RawEnv): { databaseUrl: string; runtimeRole: string | undefined } {
  const problems: string[] = [];
  const take = <K extends 'DATABASE_URL' | 'RUNTIME_ROLE'>(name: K) => {
    try {
      return loadField(env, name);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const databaseUrl = take('DATABASE_URL');
  const runtimeRole = take('RUNTIME_ROLE');
  if (databaseUrl === undefined || problems.length > 0) throw new ConfigError(problems);
  return { databaseUrl, runtimeRole };
}

/** One variable alone, parsed as loadConfig parses it; a ConfigError of one line naming it if bad. */
function loadField<K extends keyof typeof envFields>(env: RawEnv, name: K): z.output<(typeof envFields)[K]> {
  const parsed = envFields[name].safeParse(env[name] || undefined);
  if (!parsed.success) throw new ConfigError([problemOf(name, parsed.error.issues[0], env)]);
  return parsed.data as z.output<(typeof envFields)[K]>;
}

function fieldValue<K extends 'DATABASE_URL' | 'REDIS_URL' | 'SVC_BASE_URL'>(
  env: RawEnv,
  name: K,
): string | undefined {
  const parsed = envFields[name].safeParse(env[name] || undefined);
  return parsed.success ? parsed.data : undefined;
}

/** A problem line: the variable's name, then what is wrong, never its value. */
function problemOf(name: string, issue: { message: string } | undefined, env: RawEnv): string {
  return env[name] === undefined || env[name] === ''
    ? `${name}: is required but not set`
    : `${name}: ${issue?.message ?? 'is not valid'}`;
}

/** The secret values of a config, for the logger's last-line scrub. */
export function secretValues(config: Config): string[] {
  return [
    ...config.stores.map((s) => s.apiSecret),
    config.encryptionKey.toString('base64'),
    ...(config.adminToken ? [config.adminToken] : []),
    ...(config.apiToken ? [config.apiToken] : []),
    ...(config.eventsWebhookSecret ? [config.eventsWebhookSecret] : []),
    ...(config.alertWebhookSecret ? [config.alertWebhookSecret] : []),
    ...(config.alertSlackWebhookUrl ? [config.alertSlackWebhookUrl] : []),
  ];
}

function blankAsMissing(env: RawEnv): RawEnv {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
}
