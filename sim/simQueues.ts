import type { Job, JobsOptions, Queue } from 'bullmq';
import type { JobFaults } from './schedule.ts';

/**
 * The world's job queues: the part of BullMQ's Queue and Job that the daemon's processors and
 * job-adding code use (jobs/), on the world's clock, in memory. The simulator calls the daemon's
 * own processors with the jobs these hold, as BullMQ's workers would (sim/simWorkers.ts); the
 * semantics kept are the ones the product relies on:
 * - a job id is unique while its job is held, in any state (BullMQ ignores such an add);
 * - a delayed job is due `delay` ms later on the world's clock, and `promote` makes it due now;
 * - a finished job stays held (removeOnComplete/removeOnFail keep thousands) until removed.
 */
export type SimJobState = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed';

export interface SimJob {
  id: string;
  queue: string;
  name: string;
  data: unknown;
  opts: JobsOptions;
  /** When it is due, in world ms. */
  due: number;
  /** The order jobs were added in: due jobs run oldest first, as BullMQ's FIFO. */
  seq: number;
  attemptsMade: number;
  /** Times a worker died while it held the job (BullMQ's stalled-job check puts it back once). */
  stalls: number;
  state: 'held' | 'active' | 'completed' | 'failed';
  /** The world's faults for the worker that runs it (sim/schedule.ts). */
  faults?: SimJobFaults;
}

/** What a world event says about the run of the job it adds: crashes, the service's answers, a poll's reads. */
export interface SimJobFaults extends JobFaults {
  lag?: number;
  fail?: false | '5xx' | '429';
}

export interface SimQueues {
  /** The queue `name`, as a BullMQ Queue to the product's code. */
  queue(name: string): Queue;
  /** Adds a job the world makes (a scheduler's, or the indexer pass an event asks for). */
  add(queue: string, name: string, data: unknown, faults?: SimJobFaults): SimJob;
  /** The jobs due at `now`, oldest first, now active. */
  takeDue(now: number): SimJob[];
  /** Jobs held and not finished, by queue and name: what quiescence waits on. */
  unfinished(): SimJob[];
  /** The BullMQ Job the product holds for `job` (a processor's argument). */
  view(job: SimJob): Job;
  /** Jobs added, by name. */
  stats(): Record<string, number>;
  /** The job of that id, while held. */
  find(queue: string, id: string): SimJob | undefined;
}

export function createSimQueues(clock: () => number): SimQueues {
  const jobs = new Map<string, SimJob>();
  const byQueue = new Map<string, Queue>();
  let seq = 0;
  const key = (queue: string, id: string) => `${queue}\u0000${id}`;

  const add = (queue: string, name: string, data: unknown, opts: JobsOptions = {}, faults?: SimJobFaults) => {
    const id = opts.jobId ?? `auto.${seq}`;
    const held = jobs.get(key(queue, id));
    if (held) return held;
    const job: SimJob = {
      id,
      queue,
      name,
      data,
      opts,
      due: clock() + (opts.delay ?? 0),
      seq: seq++,
      attemptsMade: 0,
      stalls: 0,
      state: 'held',
      ...(faults ? { faults } : {}),
    };
    jobs.set(key(queue, id), job);
    return job;
  };

  const stateOf = (job: SimJob): SimJobState =>
    job.state === 'held' ? (job.due > clock() ? 'delayed' : 'waiting') : job.state;

  /** The BullMQ Job the product holds: a view of the job kept here. */
  const view = (job: SimJob): Job =>
    ({
      id: job.id,
      name: job.name,
      data: job.data,
      opts: job.opts,
      attemptsMade: job.attemptsMade,
      getState: async () => stateOf(job),
      isDelayed: async () => stateOf(job) === 'delayed',
      promote: async () => {
        if (stateOf(job) !== 'delayed') throw new Error(`Job ${job.id} is not in the delayed state`);
        job.due = clock();
      },
      remove: async () => {
        if (job.state === 'active') throw new Error(`Job ${job.id} is locked by a worker`);
        jobs.delete(key(job.queue, job.id));
      },
      // Wall time in the product's call (Date.now() + wait): the same wait on the world's clock.
      moveToDelayed: async (timestamp: number) => {
        job.state = 'held';
        job.due = clock() + Math.max(0, timestamp - Date.now());
      },
    }) as unknown as Job;

  const queueView = (name: string): Queue =>
    ({
      name,
      add: async (jobName: string, data: unknown, opts?: JobsOptions) => view(add(name, jobName, data, opts)),
      addBulk: async (list: Array<{ name: string; data: unknown; opts?: JobsOptions }>) =>
        list.map((j) => view(add(name, j.name, j.data, j.opts))),
      getJob: async (id: string) => {
        const job = jobs.get(key(name, id));
        return job ? view(job) : undefined;
      },
    }) as unknown as Queue;

  return {
    queue(name) {
      let q = byQueue.get(name);
      if (!q) {
        q = queueView(name);
        byQueue.set(name, q);
      }
      return q;
    },
    add: (queue, name, data, faults) => add(queue, name, data, {}, faults),
    takeDue(now) {
      const due = [...jobs.values()]
        .filter((j) => j.state === 'held' && j.due <= now)
        .sort((a, b) => a.due - b.due || a.seq - b.seq);
      for (const j of due) j.state = 'active';
      return due;
    },
    unfinished: () => [...jobs.values()].filter((j) => j.state === 'held' || j.state === 'active'),
    view,
    find: (queue, id) => jobs.get(key(queue, id)),
    stats: () => {
      const out: Record<string, number> = {};
      for (const j of jobs.values()) out[j.name] = (out[j.name] ?? 0) + 1;
      return out;
    },
  };
}
