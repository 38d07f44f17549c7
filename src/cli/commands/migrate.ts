import type { Command } from 'commander';
import { printResult } from '../output.ts';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      "apply pending database migrations to DATABASE_URL (the schema's owner), then grant RUNTIME_ROLE what the daemon needs (safe to run again, and from several processes)",
    )
    .option('--json', 'machine-readable output')
    .action(async (opts: { json?: boolean }) => {
      // Loaded when the command runs, not for every command (docs/decisions.md, "CLI start-up").
      const [{ loadMigrateSettings }, { runMigrations }] = await Promise.all([
        import('../../config/loadConfig.ts'),
        import('../../db/migrate.ts'),
      ]);
      const { databaseUrl, runtimeRole } = loadMigrateSettings(process.env);
      const result = await runMigrations(databaseUrl, runtimeRole === undefined ? {} : { runtimeRole });
      const applied = result.after - result.before;
      const grants = result.grants ?? null;
      printResult(opts.json, { applied, total: result.after, grants }, (r) =>
        [
          r.applied === 0
            ? `database is up to date (${r.total} migrations)`
            : `applied ${r.applied} migration(s); ${r.total} in all`,
          r.grants
            ? `granted role ${r.grants.role} the daemon's privileges on ${r.grants.granted} tables (none on ${r.grants.revoked} more)`
            : 'RUNTIME_ROLE not set: no grants (the daemon would run as this role, owner of the books)',
        ].join('\n'),
      );
    });
}
