import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { type EphemeralAnvil, startAnvil } from '../../src/devservices/anvil.ts';
import { type EphemeralPostgres, startEphemeralPostgres } from '../../src/devservices/postgres.ts';
import { type EphemeralRedis, startEphemeralRedis } from '../../src/devservices/redis.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL; each test file creates its own database from it (test/helpers/testDatabase.ts). */
    adminDatabaseUrl: string;
    /** The login role the daemon runs as in tests (its URL: testDatabase.ts), made here once. */
    runtimeRole: { name: string; password: string };
    redisUrl: string;
    /** A shared anvil; tests that change chain state start their own (src/devservices/anvil.ts). */
    rpcUrl: string;
  }
}

/**
 * Starts the real services once per test run: PostgreSQL, Redis and anvil, unless DATABASE_URL,
 * REDIS_URL or TEST_RPC_URL point at running ones. Everything started here is stopped in the
 * returned teardown, which vitest runs also when tests fail.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: Array<EphemeralPostgres | EphemeralRedis | EphemeralAnvil> = [];
  const teardown = async () => {
    await Promise.allSettled(started.reverse().map((s) => s.stop()));
  };
  try {
    const [pgUrl, redisUrl, rpcUrl] = await Promise.all([
      process.env.DATABASE_URL ??
        startEphemeralPostgres().then((s) => {
          started.push(s);
          return s.url;
        }),
      process.env.REDIS_URL ??
        startEphemeralRedis().then((s) => {
          started.push(s);
          return s.url;
        }),
      process.env.TEST_RPC_URL ??
        startAnvil().then((s) => {
          started.push(s);
          return s.rpcUrl;
        }),
    ]);
    project.provide('adminDatabaseUrl', pgUrl);
    project.provide('runtimeRole', await ensureRuntimeRole(pgUrl));
    project.provide('redisUrl', redisUrl);
    project.provide('rpcUrl', rpcUrl);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

/**
 * The daemon's role in tests: a plain login role (no superuser, owns nothing) that each migrated
 * test database grants what RUNTIME_ROLE gets in production. Roles are cluster-wide: made once
 * here, idempotently (a PostgreSQL given by DATABASE_URL may have it from an earlier run).
 */
async function ensureRuntimeRole(adminUrl: string): Promise<{ name: string; password: string }> {
  const role = { name: 'stablebooks_test_runtime', password: 'stablebooks-test-runtime' };
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const exists = await client.query('select 1 from pg_roles where rolname = $1', [role.name]);
    const verb = exists.rowCount ? 'alter' : 'create';
    await client.query(
      `${verb} role ${client.escapeIdentifier(role.name)} login nosuperuser nocreatedb nocreaterole password ${client.escapeLiteral(role.password)}`,
    );
  } finally {
    await client.end();
  }
  return role;
}
