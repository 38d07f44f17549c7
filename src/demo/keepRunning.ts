import type { DemoRun } from './runDemo.ts';

/**
 * `demo --keep`: prints where to look (the daemon's metrics and queues, the sandbox), then keeps
 * every service up until Ctrl-C or SIGTERM, and stops them all cleanly.
 */
export async function keepRunning(run: DemoRun, progress: (line: string) => void): Promise<void> {
  const { services } = run;
  const lines = [
    'everything is still running (Ctrl-C stops it):',
    `  metrics       ${services.daemon.url}/metrics`,
    `  queues        ${services.daemon.url}/admin/queues?token=${services.config.adminToken ?? ''}`,
    `  sandbox       ${services.sandbox.url}/_sandbox/stores`,
    `  PostgreSQL    ${services.postgres.url}`,
    `  daemon log    ${services.logFile}`,
  ];
  process.stderr.write(`${lines.join('\n')}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  progress('stopping the daemon, the sandbox, anvil, Redis and PostgreSQL');
  await run.stop();
}
