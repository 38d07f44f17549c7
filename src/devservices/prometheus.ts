import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { createPrometheusClient, type PrometheusClient } from '../dashboards/prometheusApi.ts';
import { removeAtExit, startManagedProcess, waitUntilReady } from './childProcess.ts';
import { findBinary, MissingBinaryError } from './findBinary.ts';
import { freePort } from './freePort.ts';

export interface EphemeralPrometheus extends PrometheusClient {
  /** Base URL of the server, e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  /** The last lines Prometheus printed, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface EphemeralPrometheusOptions {
  /** What to scrape, `host:port` each, at `/metrics`. */
  targets: string[];
  /** Scrape and rule evaluation interval in seconds (default 1: tests and the demo want it now). */
  scrapeIntervalSeconds?: number;
  /** Alert or recording rule files, loaded as they are unless `forDuration` is set. */
  ruleFiles?: string[];
  /** Replace every rule's `for:` by this duration (e.g. "2s"), so nobody waits ten minutes for an alert. */
  forDuration?: string;
  /** The `job` label of the scraped series (default "stablebooks"). */
  jobName?: string;
  /** Listen on this port instead of a free one. */
  port?: number;
}

/**
 * The Prometheus server binary: `prometheus` on the PATH, else in `debianDir`, where the Debian
 * package puts it (a PATH without /usr/bin is rare but real).
 */
export function prometheusBinary(env: NodeJS.ProcessEnv = process.env, debianDir = '/usr/bin'): string {
  try {
    const path = [env.PATH, debianDir].filter(Boolean).join(delimiter);
    return findBinary(
      { name: 'prometheus', debianPackage: 'prometheus', brewFormula: 'prometheus' },
      { ...env, PATH: path },
    );
  } catch (err) {
    if (!(err instanceof MissingBinaryError)) throw err;
    throw new MissingBinaryError(
      'prometheus not found: run  bash scripts/ensure-deps.sh  (as root on Debian/Ubuntu it installs the ' +
        'prometheus package), or  sudo apt-get install -y --no-install-recommends prometheus',
    );
  }
}

/**
 * Rewrites every `for:` duration of a rules file (the only change: expressions, labels and
 * annotations stay the project's).
 */
export function shortenForDurations(rules: string, duration: string): string {
  return rules.replace(/^(\s*for:\s*)\S+\s*$/gm, `$1${duration}`);
}

/**
 * The real Prometheus server on a loopback port with a temporary configuration and storage: it
 * scrapes `targets` and evaluates the rule files every `scrapeIntervalSeconds`. stop() ends it and
 * removes its folder; nothing persists.
 */
export async function startEphemeralPrometheus(
  options: EphemeralPrometheusOptions,
): Promise<EphemeralPrometheus> {
  const binary = prometheusBinary();
  const dir = mkdtempSync(join(tmpdir(), 'stablebooks-prometheus-'));
  const forgetAtExit = removeAtExit(dir);
  const interval = `${options.scrapeIntervalSeconds ?? 1}s`;
  const ruleFiles = (options.ruleFiles ?? []).map((file, i) => {
    let rules = readFileSync(file, 'utf8');
    if (options.forDuration) rules = shortenForDurations(rules, options.forDuration);
    const copy = join(dir, `${i}-${basename(file)}`);
    writeFileSync(copy, rules);
    return copy;
  });
  // JSON is YAML: no YAML writer needed.
  const config = {
    global: { scrape_interval: interval, evaluation_interval: interval, scrape_timeout: interval },
    rule_files: ruleFiles,
    scrape_configs: [
      {
        job_name: options.jobName ?? 'stablebooks',
        metrics_path: '/metrics',
        static_configs: [{ targets: options.targets }],
      },
    ],
  };
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const proc = startManagedProcess(binary, [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  try {
    await waitUntilReady(proc, 'prometheus', async () => (await fetch(`${url}/-/ready`)).ok);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    ...createPrometheusClient(url),
    url,
    output: () => proc.output(),
    async stop() {
      await proc.stop('SIGTERM', 10_000);
      rmSync(dir, { recursive: true, force: true });
      forgetAtExit();
    },
  };
}
