import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DemoRun } from './runDemo.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * `demo --keep`: prints where to look (the daemon's metrics and queues, the sandbox, Prometheus,
 * and the command that starts a local Grafana on the project's dashboards against it), then
 * keeps every service up until Ctrl-C or SIGTERM, and stops them all cleanly.
 */
export async function keepRunning(
  run: DemoRun,
  outDir: string,
  progress: (line: string) => void,
): Promise<void> {
  const { services } = run;
  const lines = [
    'everything is still running (Ctrl-C stops it):',
    `  metrics       ${services.daemon.opsUrl}/metrics`,
    `  queues        ${services.daemon.opsUrl}/admin/queues?token=${services.config.adminToken ?? ''}`,
    `  sandbox       ${services.sandbox.url}/_sandbox/stores`,
    `  PostgreSQL    ${services.postgres.url}`,
    `  daemon log    ${services.logFile}`,
  ];
  if (services.prometheus) {
    const datasources = join(outDir, 'grafana', 'datasources');
    mkdirSync(datasources, { recursive: true });
    // The dashboards refer to the datasource uid "prometheus" (grafana/provisioning/datasources).
    writeFileSync(
      join(datasources, 'prometheus.yml'),
      [
        'apiVersion: 1',
        'datasources:',
        '  - name: Prometheus',
        '    uid: prometheus',
        '    type: prometheus',
        '    access: proxy',
        `    url: ${services.prometheus.url}`,
        '    isDefault: true',
        '',
      ].join('\n'),
    );
    lines.push(
      `  Prometheus    ${services.prometheus.url} (scrapes the daemon every second, with grafana/alerts.rules.yml)`,
      '  Grafana on the project dashboards (then open http://localhost:3000):',
      `    docker run --rm --network host -e GF_AUTH_ANONYMOUS_ENABLED=true -e GF_AUTH_ANONYMOUS_ORG_ROLE=Viewer \\`,
      `      -v ${datasources}:/etc/grafana/provisioning/datasources:ro \\`,
      `      -v ${join(REPO, 'grafana/provisioning/dashboards')}:/etc/grafana/provisioning/dashboards:ro \\`,
      `      -v ${join(REPO, 'grafana/dashboards')}:/var/lib/grafana/dashboards:ro grafana/grafana:11.1.0`,
      '  or, without Grafana, a picture of the Overview dashboard:',
      `    npm run screenshot:dashboard -- --prometheus ${services.prometheus.url} --window 15 --out overview.png`,
    );
  } else {
    lines.push(`  Prometheus    not running: ${services.prometheusProblem}`);
  }
  process.stderr.write(`${lines.join('\n')}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  progress('stopping the daemon, Prometheus, the sandbox, anvil, Redis and PostgreSQL');
  await run.stop();
}
