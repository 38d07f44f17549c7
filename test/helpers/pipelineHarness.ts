import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, inject } from 'vitest';
import type { Config } from '../../src/config/loadConfig.ts';
import type { DomainContext } from '../../src/context/domainContext.ts';
import { ALL_ROLES, type Role } from '../../src/daemon/roles.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/startDaemon.ts';
import { createDatabase, type Db } from '../../src/db/database.ts';
import { sandboxDaemonConfig } from '../../src/demo/sandboxDaemonConfig.ts';
import { freePort } from '../../src/devservices/freePort.ts';
import { createAccountCache } from '../../src/ledger/ensureAccounts.ts';
import { createSvcClient } from '../../src/svc/client.ts';
import { captureLogger } from './captureLogger.ts';
import { startTestSandbox, type TestSandbox, testStore } from './sandboxHarness.ts';
import { createMigratedDatabase } from './testDatabase.ts';

export interface Pipeline {
  sandbox: TestSandbox;
  /** The daemon's role (helpers/testDatabase.ts). */
  db: Db;
  /** The schema's owner, for fixtures the daemon may not do (a test's trigger). */
  ownerDb: Db;
  config: Config;
  daemonUrl: string;
  /** The daemon's log lines, for secret checks. */
  logs: string[];
  /** DomainContext on the same database, for library calls (createIntent, trackIntent). */
  payments: DomainContext;
  /** A daemon on the pipeline's config, with `config` over it (e.g. a token the harness leaves unset). */
  startDaemon(roles?: Role[], options?: { port?: number; config?: Partial<Config> }): Promise<RunningDaemon>;
  /** Waits until `check` returns a value (polling), or fails after `ms`. */
  waitFor<T>(check: () => Promise<T | undefined | null | false>, ms?: number): Promise<T>;
}

/**
 * The whole pipeline on real parts: a sandbox on its own anvil whose stores send webhooks to the
 * daemon, a migrated database of the file's own, a Redis key prefix of its own, and daemons
 * (in-process, any roles) configured for them. Everything stops after the file.
 */
export async function startPipeline(
  options: {
    storeOverrides?: Record<string, unknown>;
    pollIntervalScale?: number;
    /**
     * Blocks below the head at which a transfer is final on the sandbox chain (the indexer reads
     * from block 0). Unset: Sepolia's default (the finalized tag, 64 blocks behind on anvil), so
     * nothing becomes final unless a test mines that far.
     */
    finalityDepth?: number;
  } = {},
): Promise<Pipeline> {
  const port = await freePort();
  const daemonUrl = `http://127.0.0.1:${port}`;
  const store = testStore('st_a', {
    checkout_webhook_url: `${daemonUrl}/webhooks/checkout`,
    claim_link_webhook_url: `${daemonUrl}/webhooks/claim-links`,
    accepted_stable_coins: [1, 2],
    ...options.storeOverrides,
  });
  const sandbox = await startTestSandbox({
    config: {
      rate_limit: { requests_per_second: 10_000, burst: 10_000 },
      businesses: [{ business_id: 'biz_1', stores: [store] }],
    },
  });
  const database = await createMigratedDatabase('pipeline', { max: 10 });
  const chain = [...sandbox.world.chains.values()][0]!;
  const config = await sandboxDaemonConfig({
    databaseUrl: database.url,
    redisUrl: inject('redisUrl'),
    sandboxUrl: sandbox.url,
    port,
    chain,
    store: {
      storeId: 'st_a',
      businessId: 'biz_1',
      apiKey: store.api_key as string,
      apiSecret: store.api_secret as string,
      signedResponse: Boolean(store.signed_response),
    },
    finalityDepth: options.finalityDepth,
    reportsDir: mkdtempSync(join(tmpdir(), 'sb-reports-')),
    queuePrefix: `sbtest-${randomBytes(4).toString('hex')}`,
    pollIntervalScale: options.pollIntervalScale ?? 0.02,
    encryptionKey: Buffer.alloc(32, 9),
  });
  const { logger, lines: logs } = captureLogger({ level: 'info', secrets: [store.api_secret as string] });
  const daemons: RunningDaemon[] = [];
  afterAll(async () => {
    await Promise.all(daemons.map((d) => d.stop()));
  }, 60_000);
  const paymentsDb = createDatabase(database.url, { max: 4 });
  afterAll(() => paymentsDb.close());
  const client = createSvcClient({
    baseUrl: sandbox.url,
    credentials: config.stores[0]!,
    retry: { maxAttempts: 3 },
    clock: sandbox.world.clock,
  });
  return {
    sandbox,
    db: database.db,
    ownerDb: database.ownerDb,
    config,
    daemonUrl,
    logs,
    payments: {
      db: paymentsDb.db,
      chains: config.chains,
      stores: config.stores,
      accounts: createAccountCache(),
      client: () => client,
      clock: sandbox.world.clock,
      logger,
      encryptionKey: config.encryptionKey,
    },
    async startDaemon(roles = ALL_ROLES, opts = {}) {
      const daemon = await startDaemon({
        config: { ...config, ...opts.config },
        roles,
        logger,
        port: opts.port ?? (daemons.some((d) => d.url.endsWith(`:${port}`)) ? 0 : port),
        host: '127.0.0.1',
        drainTimeoutMs: 10_000,
        // The daemon follows the sandbox's clock, so a test can let 14 days pass.
        clock: sandbox.world.clock,
      });
      daemons.push(daemon);
      return daemon;
    },
    async waitFor(check, ms = 20_000) {
      const end = Date.now() + ms;
      for (;;) {
        const value = await check();
        if (value) return value;
        if (Date.now() > end) throw new Error(`condition not met within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}

/** The ledger lines of an intent's entries, `kind: code amount` sorted, for exact comparison. */
export async function ledgerLinesOf(db: Db, intentId: string): Promise<string[]> {
  const { rows } = await db.execute<{ line: string }>(sql`
    select e.kind || ': ' || split_part(a.code, ':', 1) || ':' || split_part(a.code, ':', 2) || ' ' || p.amount::text as line
    from ledger_entries e join ledger_postings p on p.entry_id = e.id join ledger_accounts a on a.id = p.account_id
    where e.ref_id = ${intentId} order by e.id, a.code`);
  return rows.map((r) => r.line);
}
