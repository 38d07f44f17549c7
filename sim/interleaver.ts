import { seededRandom } from '../src/seededRandom.ts';

/**
 * The seeded scheduler of concurrent workers' statements (issue 31's two workers): each statement
 * of each worker waits for its turn, and the turn goes to a worker drawn from the seed's own
 * random stream, one statement at a time. So the order in which two workers' statements reach
 * PostgreSQL is the seed's, and a failing seed replays the same race.
 *
 * A turn is drawn once every running worker waits for one (the service and chain doubles answer
 * in-process; a worker between two statements is only ever waiting for PostgreSQL's BEGIN or
 * COMMIT, or for its turn). A statement that waits for a lock the other worker holds (its
 * transaction is between two statements, waiting for its turn) would stop the world: while a
 * statement runs, PostgreSQL is asked every `probeMs` how many of the world's statements wait for
 * a lock (`lockWaiters`); one more than those already let through is this one, which then stops
 * counting, and the other workers go on until PostgreSQL lets it through. A slow statement is not
 * a blocked one, so the order stays the seed's however loaded the machine is. Wall time decides
 * only where a worker has not asked for its next turn `quietMs` after the others did (never in
 * the worlds run so far: `stats().unwaited`).
 */
export interface Interleaver {
  /**
   * Worker `worker` starts (true) or ends (false) running jobs. While one worker alone runs, its
   * statements need no turn and go at once.
   */
  running(worker: number, on: boolean): void;
  /**
   * Worker `worker` ended a transaction (committed or rolled back): a statement of another worker
   * that waits for a lock is let through now, and no turn is drawn before it has finished.
   */
  ended(worker: number): void;
  /** Runs `run` (one statement of worker `worker`) at that worker's turn. */
  turn<R>(worker: number, run: () => R | Promise<R>): Promise<R>;
  /**
   * Statements that took a turn, turns that passed from one worker to another, statements seen
   * blocked, and turns drawn without waiting for every running worker.
   */
  stats(): { statements: number; switches: number; blocked: number; unwaited: number };
}

export interface InterleaverOptions {
  /** How many of the world's statements wait for a lock now (pg_stat_activity). */
  lockWaiters(): Promise<number>;
  probeMs?: number;
  quietMs?: number;
}

export function createInterleaver(seed: string, options: InterleaverOptions): Interleaver {
  const probeMs = options.probeMs ?? 10;
  const quietMs = options.quietMs ?? 50;
  const rnd = seededRandom(`interleave:${seed}`);
  const active = new Set<number>();
  const waiting = new Map<number, Array<() => void>>();
  let inFlight = 0;
  /** Workers whose statement waits for a lock: parked, as far as the draw is concerned. */
  const blocked = new Map<number, number>();
  /** A transaction ended while a statement was blocked: wait for the blocked ones before drawing. */
  let unblocking = false;
  const anyBlocked = () => [...blocked.values()].some((n) => n > 0);
  let last = -1;
  let quiet: NodeJS.Timeout | undefined;
  const counts = { statements: 0, switches: 0, blocked: 0, unwaited: 0 };

  const ready = () =>
    [...waiting.keys()].filter((w) => (waiting.get(w)?.length ?? 0) > 0).sort((a, b) => a - b);

  const draw = (workers: number[], unwaited: boolean) => {
    unblocking = false;
    if (quiet) clearTimeout(quiet);
    quiet = undefined;
    const worker = workers[Math.floor(rnd() * workers.length)] as number;
    const go = (waiting.get(worker) as Array<() => void>).shift() as () => void;
    if (last !== -1 && worker !== last) counts.switches++;
    if (unwaited) counts.unwaited++;
    last = worker;
    counts.statements++;
    go();
  };

  const decide = () => {
    if (inFlight > 0) return;
    const workers = ready();
    if (workers.length === 0) return;
    if (unblocking && !anyBlocked()) unblocking = false;
    const parked = (w: number) => workers.includes(w) || (blocked.get(w) ?? 0) > 0;
    if (!unblocking && [...active].every(parked)) return draw(workers, false);
    // A running worker has not asked yet: wait for it, a while.
    if (!quiet)
      quiet = setTimeout(() => {
        quiet = undefined;
        if (inFlight === 0 && ready().length > 0) draw(ready(), true);
      }, quietMs);
  };

  const waitingCount = () => [...waiting.values()].reduce((n, q) => n + q.length, 0);
  return {
    ended(worker) {
      if ([...blocked].some(([w, n]) => w !== worker && n > 0)) unblocking = true;
    },
    running(worker, on) {
      if (on) active.add(worker);
      else active.delete(worker);
      decide();
    },
    turn(worker, run) {
      if (active.size <= 1 && inFlight === 0 && waitingCount() === 0) return Promise.resolve().then(run);
      return new Promise((resolve, reject) => {
        const go = () => {
          inFlight++;
          let counted = true;
          const release = () => {
            if (!counted) return;
            counted = false;
            inFlight--;
            decide();
          };
          let isBlocked = false;
          const unblock = () => {
            if (!isBlocked) return;
            isBlocked = false;
            blocked.set(worker, (blocked.get(worker) ?? 1) - 1);
          };
          let done = false;
          const probe = async () => {
            if (done || isBlocked) return;
            const known = [...blocked.values()].reduce((n, b) => n + b, 0);
            if (!done && (await options.lockWaiters()) > known) {
              if (done) return;
              isBlocked = true;
              blocked.set(worker, (blocked.get(worker) ?? 0) + 1);
              counts.blocked++;
              release();
              return;
            }
            timer = setTimeout(probe, probeMs);
          };
          let timer = setTimeout(probe, probeMs);
          Promise.resolve()
            .then(run)
            .then(
              (value) => {
                done = true;
                clearTimeout(timer);
                resolve(value);
                // After the worker's continuation has run to its next request (or its end).
                setImmediate(() => {
                  unblock();
                  release();
                  decide();
                });
              },
              (err: unknown) => {
                done = true;
                clearTimeout(timer);
                reject(err);
                setImmediate(() => {
                  unblock();
                  release();
                  decide();
                });
              },
            );
        };
        const queue = waiting.get(worker) ?? [];
        queue.push(go);
        waiting.set(worker, queue);
        decide();
      });
    },
    stats: () => ({ ...counts }),
  };
}
