import { DelayedError, RateLimitError, UnrecoverableError } from 'bullmq';
import { type ChainJobDeps, chainProcessor } from '../jobs/chain.ts';
import { claimLinkProcessor } from '../jobs/claimLinks.ts';
import type { JobContext } from '../jobs/jobContext.ts';
import { maintenanceProcessor } from '../jobs/maintenance.ts';
import { pollProcessor } from '../jobs/pollIntent.ts';
import { webhookProcessor } from '../jobs/processWebhook.ts';
import { QUEUE } from '../jobs/queues.ts';
import { type Processor, withRetryability } from '../jobs/withRetryability.ts';
import type { DomainContext } from '../src/context/domainContext.ts';
import type { Db } from '../src/db/database.ts';
import type { Logger } from '../src/logging/logger.ts';
import type { Metrics } from '../src/metrics/metrics.ts';
import { crashGate, isConnectionLoss } from './crashingDb.ts';
import { gatedDb, type StatementGate } from './gatedDb.ts';
import type { Interleaver } from './interleaver.ts';
import type { SvcCallFault } from './schedule.ts';
import type { ReadFaults } from './serviceDouble.ts';
import type { SimJob, SimQueues } from './simQueues.ts';

/**
 * The daemon's workers in a world: `count` workers (two by default), each with the daemon's own
 * processors (jobs/) inside withRetryability, running the due jobs of the world's queues at the
 * same time. Every statement of every worker waits for its turn at the interleaver, so the two
 * workers' statements interleave as the seed says; a job's crash fault kills its worker between
 * two statements (every job it holds dies with it, as a killed process's), and the worker starts
 * again with new processors.
 *
 * What BullMQ does with a job that did not complete is kept: a worker that died holding it
 * (stalled) gives it back once (maxStalledCount 1) and fails it the second time; an error no retry
 * can fix (UnrecoverableError) fails it; others retry with the catalog's attempts and backoff; a
 * rate limit and a move to delayed put it back without spending an attempt.
 */
export interface WorkerFaults {
  /** The service's answers to the worker's next calls (sim/schedule.ts JobFaults.svc). */
  svc: SvcCallFault[];
  read: ReadFaults;
}

export interface SimWorkersDeps {
  db: Db;
  queues: SimQueues;
  interleaver: Interleaver;
  /** The domain context of a worker whose statements go to `db` and whose service calls `faults` answers. */
  domainOn(db: Db, faults: WorkerFaults): DomainContext;
  chainDeps(db: Db): ChainJobDeps;
  metrics: Metrics;
  logger: Logger;
  pollScale: number;
  refundGraceMs: number;
  /** The world's clock, in ms after its start. */
  now(): number;
  /** The seed's stream that deals due jobs to workers. */
  random(): number;
  /** The seed's stream for the product's jitter (the poll schedule's). */
  jitter(): number;
  /** A job's run ended with an error that was not a crash (the original error, before withRetryability). */
  onError(job: SimJob, err: unknown): void;
  onComplete?(job: SimJob, value: unknown): void;
}

export interface SimWorkers {
  /** Runs every due job (and those they make due) until none is due; at most `rounds` rounds. */
  drain(rounds?: number): Promise<number>;
}

/** BullMQ's stalled-job check: how long a dead worker's job waits before it is given back. */
const STALLED_MS = 30_000;
/** How long a rate-limited queue waits (the service's retry_after in this world). */
const RATE_LIMIT_MS = 1_000;

export function createSimWorkers(deps: SimWorkersDeps, count = 2): SimWorkers {
  const workers = Array.from({ length: count }, (_, index) => createWorker(deps, index));
  return {
    async drain(rounds = 50) {
      let ran = 0;
      for (let round = 0; round < rounds; round++) {
        const due = deps.queues.takeDue(deps.now());
        if (due.length === 0) break;
        ran += due.length;
        const dealt = workers.map((): SimJob[] => []);
        for (const job of due) dealt[Math.floor(deps.random() * workers.length)]?.push(job);
        await Promise.all(workers.map((w, i) => w.run(dealt[i] ?? [])));
      }
      return ran;
    },
  };
}

function createWorker(deps: SimWorkersDeps, index: number) {
  const faults: WorkerFaults = { svc: [], read: { lagMs: 0, fail: false } };
  let crash: StatementGate | undefined;
  let died = false;
  const gate: StatementGate = (run, kind, loseConnection) =>
    deps.interleaver.turn(index, () => {
      if (!crash) return run();
      return Promise.resolve(crash(run, kind, loseConnection)).catch((err: unknown) => {
        // A connection PostgreSQL dropped is a failed statement; the worker lives on.
        if (!isConnectionLoss(err)) died = true;
        throw err;
      });
    });
  const db = gatedDb(deps.db, gate, {
    prepared: true,
    onTransactionEnd: () => deps.interleaver.ended(index),
  });
  const build = () => {
    const q = (name: string) => deps.queues.queue(name);
    const ctx: JobContext = {
      domain: deps.domainOn(db, faults),
      queues: {
        webhooks: q(QUEUE.webhooks),
        maintenance: q(QUEUE.maintenance),
        polls: (s) => q(QUEUE.polls(s)),
      },
      pollScale: deps.pollScale,
      random: deps.jitter,
      metrics: deps.metrics,
      logger: deps.logger,
    };
    return {
      [QUEUE.webhooks]: webhookProcessor(ctx),
      polls: pollProcessor(ctx),
      [QUEUE.chain]: chainProcessor(deps.chainDeps(db)),
      [QUEUE.claimLinks]: claimLinkProcessor(ctx, { refundGraceMs: deps.refundGraceMs }),
      [QUEUE.maintenance]: maintenanceProcessor(ctx),
    } as Record<string, Processor>;
  };
  let processors = build();

  const runOne = async (job: SimJob) => {
    const processor = processors[job.queue.startsWith('polls-') ? 'polls' : job.queue];
    if (!processor) throw new Error(`sim: no processor for queue ${job.queue}`);
    let original: unknown;
    const run = withRetryability(async (j, token) => {
      try {
        return await processor(j, token);
      } catch (err) {
        original = err;
        throw err;
      }
    });
    try {
      const value = await run(deps.queues.view(job), `sim-worker-${index}`);
      job.state = 'completed';
      deps.onComplete?.(job, value);
    } catch (err) {
      const now = deps.now();
      if (err instanceof DelayedError) return;
      if (died) {
        job.stalls++;
        job.state = job.stalls > 1 ? 'failed' : 'held';
        job.due = now + STALLED_MS;
        return;
      }
      if (err instanceof RateLimitError) {
        job.state = 'held';
        job.due = now + RATE_LIMIT_MS;
        return;
      }
      job.attemptsMade++;
      deps.onError(job, original ?? err);
      const attempts = job.opts.attempts ?? 1;
      if (err instanceof UnrecoverableError || job.attemptsMade >= attempts) {
        job.state = 'failed';
        return;
      }
      job.state = 'held';
      job.due = now + backoffMs(job);
    }
  };

  return {
    async run(jobs: SimJob[]) {
      if (jobs.length === 0) return;
      /** The faults of the jobs about to run are the worker's while they run (a batch's reads, a crash). */
      const arm = (running: SimJob[]) => {
        const svc = running.find((j) => j.faults?.svc)?.faults?.svc ?? [];
        const reads = running.find((j) => j.faults?.lag !== undefined || j.faults?.fail);
        const crashes = running.map((j) => j.faults?.crash).filter((c): c is number => c !== undefined);
        faults.svc = [...svc];
        faults.read = { lagMs: reads?.faults?.lag ?? 0, fail: reads?.faults?.fail ?? false };
        crash =
          crashes.length > 0
            ? crashGate(Math.min(...crashes), {
                prepared: running.some((j) => j.faults?.prepared === true),
                connLoss: running.some((j) => j.faults?.connLoss === true),
              })
            : undefined;
      };
      /** A faulted run's faults are its own: a retry runs with none, as the job it was. */
      const disarm = (ran: SimJob[]) => {
        for (const j of ran) delete j.faults;
        faults.svc = [];
        faults.read = { lagMs: 0, fail: false };
        crash = undefined;
      };
      deps.interleaver.running(index, true);
      try {
        // The webhook jobs together (the micro-batcher makes one batch of them), then the others
        // one after another: one line of statements per worker, so the seed alone orders the two.
        const webhooks = jobs.filter((j) => j.queue === QUEUE.webhooks);
        if (webhooks.length > 0) {
          arm(webhooks);
          await Promise.all(webhooks.map(runOne));
          disarm(webhooks);
        }
        for (const job of jobs.filter((j) => j.queue !== QUEUE.webhooks)) {
          // A dead worker takes no more jobs: they wait for the next one, unspent.
          if (died) {
            job.state = 'held';
            continue;
          }
          arm([job]);
          await runOne(job);
          disarm([job]);
        }
      } finally {
        deps.interleaver.running(index, false);
        crash = undefined;
        if (died) {
          died = false;
          processors = build();
        }
      }
    },
  };
}

/** The catalog's backoff (exponential: delay, 2 delay, 4 delay, ...; fixed: delay). */
function backoffMs(job: SimJob): number {
  const b = job.opts.backoff;
  if (b === undefined) return 1_000;
  if (typeof b === 'number') return b;
  const delay = b.delay ?? 1_000;
  return b.type === 'exponential' ? delay * 2 ** Math.max(0, job.attemptsMade - 1) : delay;
}
