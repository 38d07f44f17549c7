// Small helpers every bench script shares: timestamped progress lines, numeric settings from the
// environment, and number formatting for the results tables.

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

/** What a bench started (servers, folders), undone in reverse order. */
export type Cleanups = Array<() => Promise<unknown>>;

/**
 * Runs a bench: everything it registers in `cleanups` is undone in reverse order when it ends,
 * fails, or is interrupted (Ctrl-C).
 */
export async function runBench(run: (cleanups: Cleanups) => Promise<void>): Promise<void> {
  const cleanups: Cleanups = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch((err) => console.error('clean-up:', err));
    cleanups.length = 0;
  };
  process.once('SIGINT', () => {
    void cleanup().then(() => process.exit(130));
  });
  try {
    await run(cleanups);
  } finally {
    await cleanup();
  }
}
