import type { TestProject } from 'vitest/node';
import { type EphemeralAnvil, startAnvil } from '../../src/devservices/anvil.ts';
import { ensureLoginRole, type LoginRole } from '../../src/devservices/loginRole.ts';
import { type EphemeralPostgres, startEphemeralPostgres } from '../../src/devservices/postgres.ts';
import { type EphemeralRedis, startEphemeralRedis } from '../../src/devservices/redis.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL; each test file creates its own database from it (test/helpers/testDatabase.ts). */
    adminDatabaseUrl: string;
    /** The login role the daemon runs as in tests (its URL: testDatabase.ts), made here once. */
    runtimeRole: LoginRole;
    redisUrl: string;
    /** A shared anvil; tests that change chain state start their own (src/devservices/anvil.ts). */
    rpcUrl: string;
  }
}

/** The login role test daemons run as: no superuser, owns nothing (test/helpers/testDatabase.ts). */
const RUNTIME_ROLE: LoginRole = { name: 'stablebooks_test_runtime', password: 'stablebooks-test-runtime' };

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
    // Made once here (roles are cluster-wide); each migrated test database grants it.
    await ensureLoginRole(pgUrl, RUNTIME_ROLE);
    project.provide('runtimeRole', RUNTIME_ROLE);
    project.provide('redisUrl', redisUrl);
    project.provide('rpcUrl', rpcUrl);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}
