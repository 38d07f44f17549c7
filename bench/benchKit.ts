// Small helpers every bench script shares: timestamped progress lines, numeric settings from the
// environment, number formatting for the results tables, and running a load tool to its end.
import { spawn } from 'node:child_process';

const started = performance.now();

/** A progress line with the seconds since the bench started. */
export function log(message: string): void {
  const t = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  console.log(`[bench ${t}s] ${message}`);
}

/** A positive number from the environment (BENCH_SECONDS and the like), or the fallback. */
export function positiveNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, not ${raw}`);
  return n;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * Runs a command (pgbench, wrk) to its end; resolves with its stdout and stderr together, rejects
 * with the end of that output when it exits non-zero. `onStart` gets its pid (to count its CPU),
 * `onLine` each line as it comes (progress).
 */
export function runCommand(
  bin: string,
  args: string[],
  options: { onStart?(pid: number): void; onLine?(line: string): void } = {},
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) options.onStart?.(child.pid);
    let out = '';
    let partial = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      out += text;
      if (!options.onLine) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) options.onLine(line);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${bin} exited with ${code}:\n${out.slice(-2000)}`));
    });
  });
}

/** What a bench started (servers, folders), undone in reverse order. */
export type Cleanups = Array<() => Promise<unknown>>;

/**
 * Runs a bench: everything it registers in `cleanups` is undone in reverse order when it ends,
 * fails, or is interrupted (Ctrl-C) or terminated.
 */
export async function runBench(run: (cleanups: Cleanups) => Promise<void>): Promise<void> {
  const cleanups: Cleanups = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => console.error('clean-up:', err));
    cleanups.length = 0;
  };
  // SIGTERM too (kill, timeout): without it the bench's PostgreSQL, Redis and anvil outlived it.
  process.once('SIGINT', () => {
    void cleanup().then(() => process.exit(130));
  });
  process.once('SIGTERM', () => {
    void cleanup().then(() => process.exit(143));
  });
  try {
    await run(cleanups);
  } finally {
    await cleanup();
  }
}
