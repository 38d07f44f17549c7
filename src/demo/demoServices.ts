import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../config/loadConfig.ts';
import { createDomainContext, type DomainContext } from '../context/domainContext.ts';
import { ALL_ROLES } from '../daemon/roles.ts';
import { type RunningDaemon, startDaemon } from '../daemon/startDaemon.ts';
import { createDatabase, type Database } from '../db/database.ts';
import { runMigrations } from '../db/migrate.ts';
import { freePort } from '../devservices/freePort.ts';
import { ensureLoginRole, type LoginRole, urlAsRole } from '../devservices/loginRole.ts';
import { type EphemeralPostgres, startEphemeralPostgres } from '../devservices/postgres.ts';
import { type EphemeralPrometheus, startEphemeralPrometheus } from '../devservices/prometheus.ts';
import { type EphemeralRedis, startEphemeralRedis } from '../devservices/redis.ts';
import { createLogger, type Logger } from '../logging/logger.ts';
import type { SandboxChain } from '../sandbox/chain/types.ts';
import { type RunningSandbox, runSandbox } from '../sandbox/runSandbox.ts';
import { sandboxConfigSchema } from '../sandbox/sandboxConfig.ts';
import { createSvcClient, type SvcClient } from '../svc/client.ts';
import { sandboxDaemonConfig } from './sandboxDaemonConfig.ts';
import { waitUntil } from './waitUntil.ts';

export const DEMO_STORE = 'st_demo';
export const DEMO_BUSINESS = 'biz_demo';
/** Sepolia's id: the sandbox simulates it on anvil, so the registry's defaults read naturally. */
export const DEMO_CHAIN_ID = 11155111;
/** Blocks below the head at which a transfer is final on the demo chain (anvil has no real finality). */
export const DEMO_FINALITY_DEPTH = 2;
/**
 * The role the demo's daemon runs as, as in production (README, "Two database roles"): migrate
 * runs as the superuser that owns the throwaway server and grants this role the daemon's needs.
 */
const DEMO_RUNTIME_ROLE: LoginRole = { name: 'stablebooks_daemon', password: 'stablebooks-demo' };

/** Everything the demo runs, on this machine only, gone after stop() (unless kept). */
export interface DemoServices {
  postgres: EphemeralPostgres;
  redis: EphemeralRedis;
  sandbox: RunningSandbox;
  chain: SandboxChain;
  daemon: RunningDaemon;
  /** Scrapes the daemon every second with the project's alert rules; null when it could not start. */
  prometheus: EphemeralPrometheus | null;
  /** Why there is no Prometheus (the binary is missing, …). */
  prometheusProblem: string | null;
  config: Config;
  database: Database;
  /** The library side of stablebooks (createIntent, createPayout) on the demo's database. */
  deps: DomainContext;
  /** The service's client for the demo store (what another system of the merchant would use). */
  client: SvcClient;
  logger: Logger;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway PostgreSQL (migrated) and Redis from the server binaries, the sandbox on its
 * own anvil (seeded: same seed, same wallets), and the daemon with every role in this process,
 * following the sandbox's clock so 14 days can pass. The daemon logs to `logFile`, not the terminal.
 */
export async function startDemoServices(options: {
  seed: string;
  outDir: string;
  /** Opens /admin/queues (bull-board) for `demo --keep`. */
  adminToken: string;
}): Promise<DemoServices> {
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const [postgres, redis] = await Promise.all([startEphemeralPostgres(), startEphemeralRedis()]);
    stops.push(
      () => postgres.stop(),
      () => redis.stop(),
    );
    await ensureLoginRole(postgres.url, DEMO_RUNTIME_ROLE);
    await runMigrations(postgres.url, { runtimeRole: DEMO_RUNTIME_ROLE.name });
    const daemonDatabaseUrl = urlAsRole(postgres.url, DEMO_RUNTIME_ROLE);

    const port = await freePort();
    const daemonUrl = `http://127.0.0.1:${port}`;
    const store = {
      store_id: DEMO_STORE,
      api_key: `pk_demo_${randomBytes(6).toString('hex')}`,
      api_secret: `sk_demo_${randomBytes(24).toString('base64url')}`,
      scopes: ['claim_link:auto_payout'],
      signed_response: true,
      checkout_webhook_url: `${daemonUrl}/webhooks/checkout`,
      claim_link_webhook_url: `${daemonUrl}/webhooks/claim-links`,
      accepted_stable_coins: [1, 2],
    };
    const sandbox = await runSandbox({
      config: sandboxConfigSchema.parse({
        rate_limit: { requests_per_second: 200, burst: 400 },
        businesses: [{ business_id: DEMO_BUSINESS, stores: [store] }],
      }),
      host: '127.0.0.1',
      port: 0,
      chains: [DEMO_CHAIN_ID],
      rpcUrls: new Map(),
      seed: options.seed,
    });
    stops.push(() => sandbox.stop());
    const chain = sandbox.world.chains.get(DEMO_CHAIN_ID);
    if (!chain) throw new Error('the sandbox did not start its chain');

    mkdirSync(options.outDir, { recursive: true });
    const logFile = join(options.outDir, 'daemon.log');
    const logStream = createWriteStream(logFile, { flags: 'w' });
    stops.push(() => new Promise<void>((resolve) => logStream.end(resolve)));
    const logger = createLogger({ level: 'info', secrets: [store.api_secret], destination: logStream });

    const config = await sandboxDaemonConfig({
      databaseUrl: daemonDatabaseUrl,
      redisUrl: redis.url,
      sandboxUrl: sandbox.url,
      port,
      chain,
      store: {
        storeId: DEMO_STORE,
        businessId: DEMO_BUSINESS,
        apiKey: store.api_key,
        apiSecret: store.api_secret,
        signedResponse: true,
      },
      finalityDepth: DEMO_FINALITY_DEPTH,
      reportsDir: join(options.outDir, 'reports'),
      queuePrefix: 'sbdemo',
      pollIntervalScale: 0.05,
      adminToken: options.adminToken,
    });

    const daemon = await startDaemon({
      config,
      roles: ALL_ROLES,
      logger,
      port,
      host: '127.0.0.1',
      drainTimeoutMs: 10_000,
      clock: sandbox.world.clock,
    });
    stops.push(() => daemon.stop());

    // Prometheus is for looking (--keep, the README's dashboard screenshot): the demo goes on
    // without it, and says why.
    let prometheus: EphemeralPrometheus | null = null;
    let prometheusProblem: string | null = null;
    try {
      prometheus = await startEphemeralPrometheus({
        targets: [new URL(daemon.opsUrl).host],
        ruleFiles: [fileURLToPath(new URL('../../grafana/alerts.rules.yml', import.meta.url))],
      });
      const started = prometheus;
      stops.push(() => started.stop());
      // Its first scrape before any money moves, so its series (and the dashboards) hold the whole run.
      await waitUntil(
        'the first Prometheus scrape',
        async () => (await started.query('up')).length > 0,
        20_000,
      );
    } catch (err) {
      prometheusProblem = (err as Error).message.split('\n')[0] ?? 'did not start';
    }

    const database = createDatabase(daemonDatabaseUrl, { max: 6, applicationName: 'stablebooks-demo' });
    stops.push(() => database.close());
    const clock = sandbox.world.clock;
    const client = createSvcClient({
      baseUrl: sandbox.url,
      credentials: config.stores[0]!,
      retry: { maxAttempts: 3 },
      clock,
    });
    // createPayout retries create with the same reference_id itself: one attempt per call here.
    const deps = createDomainContext(config, {
      db: database.db,
      clock,
      logger,
      clientOptions: () => ({ retry: { maxAttempts: 1 } }),
    });
    return {
      postgres,
      redis,
      sandbox,
      chain,
      daemon,
      prometheus,
      prometheusProblem,
      config,
      database,
      deps,
      client,
      logger,
      logFile,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
