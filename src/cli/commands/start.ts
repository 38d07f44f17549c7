import type { Command } from 'commander';
import { ALL_ROLES, type Role } from '../../daemon/roles.ts';
import { CliError } from '../CliError.ts';

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('run the daemon: webhook intake, workers and schedulers (all roles by default)')
    .option(
      '--role <role>',
      'all | intake | worker | scheduler (repeat or comma-separate for several)',
      'all',
    )
    .action(async (opts: { role: string }) => {
      const requested = opts.role.split(',').map((r) => r.trim());
      const roles: Role[] = requested.includes('all') ? ALL_ROLES : [];
      for (const r of requested) {
        if (r === 'all') continue;
        if (!(ALL_ROLES as string[]).includes(r))
          throw new CliError(`--role: ${r} is not one of all, intake, worker, scheduler`);
        roles.push(r as Role);
      }
      // The daemon logs errors with their stacks: from the compiled build (bin/cliBuild.js) they
      // name the TypeScript files and lines through its source maps, as under tsx. Only here:
      // reading the maps of what a command loads costs it start-up time.
      process.setSourceMapsEnabled(true);
      // Loaded here, not at the top: other commands need none of the daemon's modules, and a bad
      // configuration is reported before the daemon's are loaded.
      const [{ loadConfig, secretValues }, { createLogger }] = await Promise.all([
        import('../../config/loadConfig.ts'),
        import('../../logging/logger.ts'),
      ]);
      const config = loadConfig(process.env);
      const logger = createLogger({
        level: config.logLevel,
        secrets: secretValues(config),
        name: 'stablebooks',
      });
      const { startDaemon } = await import('../../daemon/startDaemon.ts');
      const daemon = await startDaemon({ config, roles, logger });
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      logger.info('stopping: draining in-flight work');
      await daemon.stop();
      process.exit(0);
    });
}
