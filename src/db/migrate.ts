import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { applyRuntimeGrants, checkRuntimeRole, type GrantSummary } from './runtimeGrants.ts';

/** The repository's migrations/ folder: drizzle-kit output plus hand-written SQL, append-only. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../migrations', import.meta.url));

/** Any constant works; it only has to be the same for every stablebooks process. */
const MIGRATION_LOCK_KEY = 0x5b_b0_0c_5;

export interface MigrationResult {
  /** Migrations recorded before and after this run; equal when there was nothing to do. */
  before: number;
  after: number;
  /** The grants to the daemon's role, when one was named (RUNTIME_ROLE). */
  grants?: GrantSummary;
}

/**
 * Applies pending migrations, idempotently. Runs under a session advisory lock so that several
 * processes starting at once apply each migration exactly once (the others wait, then find
 * nothing to do). With `runtimeRole`, then grants that role what the daemon needs and nothing
 * more (src/db/runtimeGrants.ts), under the same lock: `databaseUrl` is the schema's owner.
 */
export async function runMigrations(
  databaseUrl: string,
  options: { migrationsFolder?: string; runtimeRole?: string } = {},
): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    if (options.runtimeRole !== undefined) await checkRuntimeRole(client, options.runtimeRole);
    const before = await countApplied(client);
    await migrate(drizzle(client), { migrationsFolder: options.migrationsFolder ?? MIGRATIONS_FOLDER });
    const after = await countApplied(client);
    if (options.runtimeRole === undefined) return { before, after };
    return { before, after, grants: await applyRuntimeGrants(client, options.runtimeRole) };
  } finally {
    await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

async function countApplied(client: pg.Client): Promise<number> {
  const exists = await client.query<{ t: string | null }>(
    `select to_regclass('drizzle.__drizzle_migrations') as t`,
  );
  if (!exists.rows[0]?.t) return 0;
  const { rows } = await client.query<{ n: number }>(
    'select count(*)::int as n from drizzle.__drizzle_migrations',
  );
  return rows[0]?.n ?? 0;
}
