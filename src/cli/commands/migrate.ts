import type { Command } from 'commander';
import { loadDatabaseUrl } from '../../config/loadConfig.ts';
import { runMigrations } from '../../db/migrate.ts';
import { printResult } from '../output.ts';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'apply pending database migrations to DATABASE_URL (safe to run again, and from several processes)',
    )
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      const result = await runMigrations(loadDatabaseUrl(process.env));
      const applied = result.after - result.before;
      printResult(opts.json, { applied, total: result.after }, (r) =>
        r.applied === 0
          ? `database is up to date (${r.total} migrations)`
          : `applied ${r.applied} migration(s); ${r.total} in all`,
      );
    });
}
