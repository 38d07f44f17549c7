import type { Clock } from './clock.ts';

/**
 * A clock that follows another process's clock: the sandbox's `GET /_sandbox/clock`, so that the
 * demo and end-to-end tests can let 14 days pass in a second (docs/accounting.md, "Payments, payouts and the chain") with the daemon
 * in step. It keeps the offset to the system clock and refreshes it every `intervalMs`; between
 * refreshes time runs on normally. Never used in production (CLOCK_URL unset).
 */
export interface FollowedClock extends Clock {
  /** Reads the remote clock once (throws when it cannot), then keeps refreshing until stop(). */
  start(): Promise<void>;
  stop(): void;
}

export function createFollowedClock(
  url: string,
  options: { intervalMs?: number; onError?: (err: Error) => void } = {},
): FollowedClock {
  let offsetMs = 0;
  let timer: NodeJS.Timeout | undefined;
  const refresh = async () => {
    const started = Date.now();
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!res.ok) throw new Error(`clock ${new URL(url).host}: HTTP ${res.status}`);
    const body = (await res.json()) as { now?: unknown };
    const remote = typeof body.now === 'string' ? Date.parse(body.now) : Number.NaN;
    if (Number.isNaN(remote)) throw new Error(`clock ${new URL(url).host}: answer has no ISO "now"`);
    // The remote read happened somewhere in the round trip: take its middle.
    offsetMs = remote - (started + Date.now()) / 2;
  };
  return {
    now: () => new Date(Date.now() + offsetMs),
    async start() {
      await refresh();
      timer = setInterval(() => {
        refresh().catch((err: Error) => options.onError?.(err));
      }, options.intervalMs ?? 1_000);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
