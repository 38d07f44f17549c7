import type { Clock } from '../clock.ts';

/**
 * The sandbox's clock: real time plus an offset that the control API can advance, and timers that
 * fire on sandbox time (intent timeouts, webhook retries, the 14-day claim-link expiry). advance()
 * runs every timer that fell due before it returns, so a test that advances 14 days sees the
 * expiry done when the call answers.
 */
export interface SandboxClock extends Clock {
  /** Moves sandbox time forward and runs the timers now due, in time order. */
  advance(seconds: number): Promise<void>;
  /** Runs fn once sandbox time reaches `at` (at once if it already has). Returns a cancel function. */
  at(at: Date, fn: () => Promise<void> | void): () => void;
  /** Runs fn after `ms` of sandbox time. */
  after(ms: number, fn: () => Promise<void> | void): () => void;
  stop(): void;
}

interface Timer {
  due: number;
  seq: number;
  fn: () => Promise<void> | void;
}

export function createSandboxClock(
  options: { tickMs?: number; onError?: (err: unknown) => void } = {},
): SandboxClock {
  let offsetMs = 0;
  let seq = 0;
  let timers: Timer[] = [];
  let running: Promise<void> = Promise.resolve();
  const now = () => Date.now() + offsetMs;

  const runDue = (): Promise<void> => {
    // Serialised: a run waits for the previous one, so timers never overlap or run twice.
    running = running.then(async () => {
      for (;;) {
        const t = now();
        const due = timers.filter((x) => x.due <= t).sort((a, b) => a.due - b.due || a.seq - b.seq);
        if (due.length === 0) return;
        timers = timers.filter((x) => !due.includes(x));
        for (const timer of due) {
          try {
            await timer.fn();
          } catch (err) {
            options.onError?.(err);
          }
        }
      }
    });
    return running;
  };
  const interval = setInterval(() => void runDue(), options.tickMs ?? 50);
  interval.unref();

  const schedule = (due: number, fn: Timer['fn']) => {
    const timer: Timer = { due, seq: seq++, fn };
    timers.push(timer);
    return () => {
      timers = timers.filter((x) => x !== timer);
    };
  };

  return {
    now: () => new Date(now()),
    async advance(seconds) {
      if (!Number.isFinite(seconds) || seconds < 0)
        throw new RangeError('seconds must be a non-negative number');
      offsetMs += Math.round(seconds * 1000);
      await runDue();
    },
    at: (at, fn) => schedule(at.getTime(), fn),
    after: (ms, fn) => schedule(now() + ms, fn),
    stop: () => clearInterval(interval),
  };
}
