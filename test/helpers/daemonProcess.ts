import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../src/config/loadConfig.ts';
import { type ManagedProcess, startManagedProcess } from '../../src/devservices/childProcess.ts';
import { freePort } from '../../src/devservices/freePort.ts';

/**
 * The daemon as a real child process (`node bin/stablebooks.js start --role …`) configured only
 * through its environment, as an operator would run it. Used by test/e2e/pipelineProcesses.test.ts
 * and bench/intake.ts, so it imports nothing from vitest: whoever starts a process stops it.
 */
const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(REPO, 'bin', 'stablebooks.js');

/** What the daemon's STORES_FILE says about one store, and where its secret comes from. */
export interface DaemonStore {
  storeId: string;
  businessId: string;
  apiKey: string;
  apiSecret: string;
  /** Per EIP-155 chain id: the store's merchant (tx_to) and custody wallets. */
  wallets: Record<number, { merchant: string; custody: string }>;
  /** STORES_FILE functional_currency; absent: the file's default (USD). */
  functionalCurrency?: string;
  /** STORES_FILE par (symbol -> rate); absent or empty: off. */
  par?: Record<string, string>;
}

/** A sandbox chain as CHAINS_FILE and RPC_URL_<id> describe it. */
export interface DaemonChain {
  chainId: number;
  rpcUrl: string;
  tokens: { USDT: string; USDC: string };
  decimals: number;
  /** Where the indexer starts (CHAINS_FILE start_block); default: 10,000 blocks below the head. */
  startBlock?: number;
  /** CHAINS_FILE block_time_ms; default: the registry's. */
  blockTimeMs?: number;
}

export interface DaemonEnvOptions {
  /** Folder for STORES_FILE, CHAINS_FILE and the processes' logs. */
  dir: string;
  databaseUrl: string;
  redisUrl: string;
  svcBaseUrl: string;
  stores: DaemonStore[];
  chains: DaemonChain[];
  queuePrefix: string;
  pollIntervalScale?: number;
  pollsPerSecond?: number;
  logLevel?: string;
  /** EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET: outbound events delivered there. */
  eventsWebhook?: { url: string; secret: string };
}

/**
 * Writes STORES_FILE and CHAINS_FILE into `dir` and returns the environment of a daemon process
 * (without PORT, which is per process).
 */
export function daemonEnv(options: DaemonEnvOptions): Record<string, string> {
  mkdirSync(options.dir, { recursive: true });
  const storesFile = join(options.dir, 'stores.json');
  const chainsFile = join(options.dir, 'chains.json');
  const env: Record<string, string> = {};
  writeFileSync(
    storesFile,
    JSON.stringify(
      options.stores.map((s) => {
        const secretEnv = `SVC_SECRET_${s.storeId.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
        env[secretEnv] = s.apiSecret;
        return {
          store_id: s.storeId,
          business_id: s.businessId,
          api_key: s.apiKey,
          api_secret_env: secretEnv,
          wallets: Object.fromEntries(Object.entries(s.wallets).map(([id, w]) => [String(id), w])),
          ...(s.functionalCurrency === undefined ? {} : { functional_currency: s.functionalCurrency }),
          ...(s.par === undefined || Object.keys(s.par).length === 0 ? {} : { par: s.par }),
        };
      }),
      null,
      2,
    ),
  );
  writeFileSync(
    chainsFile,
    JSON.stringify(
      options.chains.map((c) => ({
        chain_id: c.chainId,
        tokens: {
          USDT: { address: c.tokens.USDT, decimals: c.decimals },
          USDC: { address: c.tokens.USDC, decimals: c.decimals },
        },
        ...(c.startBlock === undefined ? {} : { start_block: c.startBlock }),
        ...(c.blockTimeMs === undefined ? {} : { block_time_ms: c.blockTimeMs }),
      })),
      null,
      2,
    ),
  );
  for (const c of options.chains) env[`RPC_URL_${c.chainId}`] = c.rpcUrl;
  return {
    ...env,
    DATABASE_URL: options.databaseUrl,
    REDIS_URL: options.redisUrl,
    SVC_BASE_URL: options.svcBaseUrl,
    STORES_FILE: storesFile,
    CHAINS_FILE: chainsFile,
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    QUEUE_PREFIX: options.queuePrefix,
    POLL_INTERVAL_SCALE: String(options.pollIntervalScale ?? 1),
    POLLS_PER_SECOND: String(options.pollsPerSecond ?? 50),
    LOG_LEVEL: options.logLevel ?? 'info',
    REPORTS_DIR: join(options.dir, 'reports'),
    ...(options.eventsWebhook
      ? { EVENTS_WEBHOOK_URL: options.eventsWebhook.url, EVENTS_WEBHOOK_SECRET: options.eventsWebhook.secret }
      : {}),
  };
}

export interface DaemonProcess {
  label: string;
  pid: number;
  /** http://127.0.0.1:<port>: webhooks and /healthz. */
  url: string;
  /** http://127.0.0.1:<ops port>: /metrics, /readyz, /admin/queues. */
  opsUrl: string;
  /** Where its stdout and stderr go, whole. */
  logFile: string;
  /** Resolves with the exit code (null when a signal ended it) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal; resolves when the process has exited. */
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after `timeoutMs`: for clean-up, whatever state the process is in. */
  stop(timeoutMs?: number): Promise<void>;
  /** Resident set size now, in bytes (VmRSS of /proc/<pid>/status), or null once it has exited. */
  rssBytes(): number | null;
  /** A counter or gauge of its /metrics, summed over the series whose labels include `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

/**
 * Starts `node bin/stablebooks.js start --role <roles>` with exactly `env` (plus PATH and HOME)
 * and PORT and OPS_PORT, and resolves once /healthz answers. The log goes to `<logDir>/<label>.log`.
 */
export async function startDaemonProcess(options: {
  label: string;
  roles: string;
  env: Record<string, string>;
  port: number;
  /** The operations port; default a free one. */
  opsPort?: number;
  logDir: string;
  readyTimeoutMs?: number;
  /** Extra Node.js flags (the benches' CPU profile). */
  nodeFlags?: string[];
}): Promise<DaemonProcess> {
  const url = `http://127.0.0.1:${options.port}`;
  const opsPort = options.opsPort ?? (await freePort());
  const opsUrl = `http://127.0.0.1:${opsPort}`;
  const proc: ManagedProcess = startManagedProcess(
    process.execPath,
    // The V8 flag every launcher gives the daemon (Dockerfile, scripts/run.sh; docs/decisions.md).
    // --no-dotenv: exactly `env`, whatever .env the repository holds.
    [
      '--max-semi-space-size=4',
      ...(options.nodeFlags ?? []),
      BIN,
      '--no-dotenv',
      'start',
      '--role',
      options.roles,
    ],
    {
      cwd: REPO,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        ...options.env,
        PORT: String(options.port),
        OPS_PORT: String(opsPort),
      },
    },
  );
  const logFile = join(options.logDir, `${options.label}.log`);
  const log = createWriteStream(logFile, { flags: 'a' });
  proc.child.stdout?.on('data', (chunk: Buffer) => log.write(chunk));
  proc.child.stderr?.on('data', (chunk: Buffer) => log.write(chunk));
  const exited = proc.exited.then((code) => {
    log.end();
    return { code, signal: proc.child.signalCode };
  });
  const pid = proc.child.pid ?? -1;
  const handle: DaemonProcess = {
    label: options.label,
    pid,
    url,
    opsUrl,
    logFile,
    exited,
    async kill(signal) {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill(signal);
      return exited;
    },
    stop: (timeoutMs = 15_000) => proc.stop('SIGTERM', timeoutMs),
    rssBytes() {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
        return kb ? Number(kb) * 1024 : null;
      } catch {
        return null;
      }
    },
    async metric(name, labels = {}) {
      const text = await (await fetch(`${opsUrl}/metrics`)).text();
      let sum = 0;
      for (const line of text.split('\n')) {
        const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? ([^ ]+)$/.exec(line);
        if (!m || m[1] !== name) continue;
        const series = m[2] ?? '';
        if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += Number(m[3]);
      }
      return sum;
    },
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  let dead = false;
  void exited.then(() => {
    dead = true;
  });
  for (;;) {
    if (dead) throw new Error(`${options.label} exited during start-up: ${tail(proc.output())}`);
    const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return handle;
    if (Date.now() > deadline) {
      await proc.stop('SIGKILL');
      throw new Error(`${options.label} did not answer /healthz in time: ${tail(proc.output())}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function tail(text: string): string {
  return text.trim().split('\n').slice(-5).join(' | ') || '(no output)';
}

/** daemonEnv for a test pipeline's Config (test/helpers/pipelineHarness.ts), with its PORT. */
export function daemonEnvForConfig(config: Config): Record<string, string> {
  return {
    ...daemonEnv({
      dir: mkdtempSync(join(tmpdir(), 'sb-daemon-env-')),
      databaseUrl: config.databaseUrl,
      redisUrl: config.redisUrl,
      svcBaseUrl: config.svcBaseUrl,
      queuePrefix: config.queuePrefix,
      pollIntervalScale: config.pollIntervalScale,
      logLevel: 'warn',
      stores: config.stores.map((s) => ({
        storeId: s.storeId,
        businessId: s.businessId,
        apiKey: s.apiKey,
        apiSecret: s.apiSecret,
        wallets: Object.fromEntries(s.wallets),
        functionalCurrency: s.functionalCurrency,
        par: Object.fromEntries(s.par),
      })),
      chains: config.chains
        .chains()
        .filter((c) => config.rpcUrls.has(c.chainId))
        .map((c) => {
          const token = (symbol: string) => c.tokens.find((t) => t.symbol === symbol)?.address ?? '';
          return {
            chainId: c.chainId,
            rpcUrl: config.rpcUrls.get(c.chainId)?.join(',') ?? '',
            tokens: { USDT: token('USDT'), USDC: token('USDC') },
            decimals: c.tokens[0]?.decimals ?? 6,
            blockTimeMs: c.blockTimeMs,
          };
        }),
    }),
    PORT: String(config.port),
  };
}
