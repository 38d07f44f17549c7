import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { QUEUE, reconJobs } from '../../jobs/queues.ts';
import { previousUtcDay } from '../../src/recon/period.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The scheduled reconciliation: RECON_CRON through one BullMQ job scheduler however many
 * scheduler processes run, the run covering the previous UTC day (of the daemon's clock, here
 * the sandbox's), its row and files, and the "last successful run" metric on /metrics.
 */
const pipeline = await startPipeline();

describe('scheduled reconciliation', () => {
  it('behavior: two schedulers keep one cron scheduler; its run covers yesterday and shows on /metrics', async () => {
    pipeline.config.reconCron = '*/2 * * * * *';
    const first = await pipeline.startDaemon(['scheduler']);
    await pipeline.startDaemon(['scheduler', 'worker']);

    const queue = new Queue(QUEUE.recon, {
      connection: { url: pipeline.config.redisUrl },
      prefix: pipeline.config.queuePrefix,
    });
    try {
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers.map((s) => [s.key, s.pattern, s.tz])).toEqual([
        [reconJobs.run.schedulerId, '*/2 * * * * *', 'UTC'],
      ]);
    } finally {
      await queue.close();
    }

    const run = await pipeline.waitFor(async () => {
      const { rows } = await pipeline.db.execute<{
        period_from: Date;
        period_to: Date;
        store_key: string;
        passed: boolean;
        files: { name: string; path: string }[];
      }>(sql`select period_from, period_to, store_key, passed, files from recon_runs
             where trigger = 'schedule' and status = 'completed'`);
      return rows[0];
    }, 60_000);
    const clock = await fetch(`${pipeline.sandbox.url}/_sandbox/clock`).then(
      (r) => r.json() as Promise<{ now: string }>,
    );
    const yesterday = previousUtcDay(new Date(clock.now));
    expect(new Date(run.period_from).toISOString()).toBe(yesterday.from.toISOString());
    expect(new Date(run.period_to).toISOString()).toBe(yesterday.to.toISOString());
    expect(run.store_key).toBe('*');
    expect(run.files.map((f) => f.name)).toEqual(expect.arrayContaining(['report.json', 'report.html']));
    for (const f of run.files) expect(existsSync(f.path)).toBe(true);
    expect(run.files[0]!.path.startsWith(join(pipeline.config.reportsDir, 'all'))).toBe(true);

    const metrics = await pipeline.waitFor(async () => {
      const text = await fetch(`${first.opsUrl}/metrics`).then((r) => r.text());
      return /stablebooks_recon_last_success_timestamp_seconds\{scope="all"\} \d/.test(text)
        ? text
        : undefined;
    }, 20_000);
    const seconds = Number(
      /stablebooks_recon_last_success_timestamp_seconds\{scope="all"\} (\S+)/.exec(metrics)?.[1],
    );
    expect(Math.abs(seconds - Date.now() / 1000)).toBeLessThan(120);
    expect(metrics).toMatch(/stablebooks_recon_last_passed\{scope="all"\} [01]/);
  });
});
