import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { startManagedProcess, waitUntilReady } from '../../src/devservices/childProcess.ts';
import { freePort } from '../../src/devservices/freePort.ts';

/** One alert as Prometheus's `GET /api/v1/alerts` lists it. */
export interface PrometheusAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface PrometheusSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  /** The alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** An instant PromQL query (vector results). */
  query(promql: string): Promise<PrometheusSample[]>;
  /** The last lines Prometheus printed, for failure messages. */
  output(): string;
}

/** The Prometheus server binary: `prometheus` on the PATH, else the Debian package's. */
export function prometheusBinary(): string {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir && existsSync(join(dir, 'prometheus'))) return join(dir, 'prometheus');
  }
  if (existsSync('/usr/bin/prometheus')) return '/usr/bin/prometheus';
  throw new Error(
    'prometheus not found: run  bash scripts/ensure-deps.sh  (as root on Debian/Ubuntu it installs the ' +
      'prometheus package), or  sudo apt-get install -y --no-install-recommends prometheus',
  );
}

/**
 * Rewrites every `for:` duration of an alert rules file (the only change: expressions, labels
 * and annotations stay the project's), so a test does not wait ten minutes for an alert.
 */
export function shortenForDurations(rules: string, duration: string): string {
  return rules.replace(/^(\s*for:\s*)\S+\s*$/gm, `$1${duration}`);
}

/**
 * The real Prometheus server, on a free loopback port with a temporary configuration and
 * storage: it scrapes `targets` (host:port, path /metrics) and evaluates `rulesFile` every
 * `intervalSeconds`, with each rule's `for:` replaced by `forDuration` when given. Stopped, and
 * its directory removed, after the file.
 */
export async function startPrometheus(options: {
  targets: string[];
  rulesFile: string;
  forDuration?: string;
  intervalSeconds?: number;
}): Promise<RunningPrometheus> {
  const binary = prometheusBinary();
  const dir = await mkdtemp(join(tmpdir(), 'stablebooks-prometheus-'));
  const interval = `${options.intervalSeconds ?? 1}s`;
  let rules = await readFile(options.rulesFile, 'utf8');
  if (options.forDuration) rules = shortenForDurations(rules, options.forDuration);
  await writeFile(join(dir, 'alerts.rules.yml'), rules);
  // JSON is YAML: no YAML writer needed.
  const config = {
    global: { scrape_interval: interval, evaluation_interval: interval, scrape_timeout: interval },
    rule_files: [join(dir, 'alerts.rules.yml')],
    scrape_configs: [
      { job_name: 'stablebooks', metrics_path: '/metrics', static_configs: [{ targets: options.targets }] },
    ],
  };
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = startManagedProcess(binary, [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  afterAll(async () => {
    await proc.stop('SIGTERM', 10_000);
    await rm(dir, { recursive: true, force: true });
  }, 30_000);
  await waitUntilReady(proc, 'prometheus', async () => {
    try {
      return (await fetch(`${url}/-/ready`)).ok;
    } catch {
      return false;
    }
  });

  async function api<T>(path: string): Promise<T> {
    const res = await fetch(`${url}${path}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? res.status}`);
    return body.data;
  }
  return {
    url,
    async alerts() {
      return (await api<{ alerts: PrometheusAlert[] }>('/api/v1/alerts')).alerts;
    },
    async query(promql) {
      const data = await api<{ resultType: string; result: PrometheusSample[] }>(
        `/api/v1/query?query=${encodeURIComponent(promql)}`,
      );
      return data.result;
    },
    output: () => proc.output(),
  };
}
