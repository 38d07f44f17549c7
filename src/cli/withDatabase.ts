import type { Db } from '../db/database.ts';

/**
 * Runs one command's work on a pool of DATABASE_URL, closed after it. The configuration and the
 * driver (zod, pg, drizzle) are imported here, when a command runs, and not where the command is
 * registered: `--help` and `--version` load none of them (docs/decisions.md, "CLI start-up").
 */
export async function withDatabase<T>(
  options: { max: number; applicationName?: string },
  fn: (db: Db) => Promise<T>,
): Promise<T> {
  const [{ loadDatabaseUrl }, { createDatabase }] = await Promise.all([
    import('../config/loadConfig.ts'),
    import('../db/database.ts'),
  ]);
  const database = createDatabase(loadDatabaseUrl(process.env), options);
  try {
    return await fn(database.db);
  } finally {
    await database.close();
  }
}
