import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import type { PublicClient } from 'viem';
import { afterAll, describe, expect, it } from 'vitest';
import { indexChainPass } from '../../../src/chain/indexChain.ts';
import { createManualClock } from '../../../src/clock.ts';
import { createDatabase } from '../../../src/db/database.ts';
import { type ReconDeps, runReconciliation } from '../../../src/recon/runReconciliation.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { CHAIN_ID, createIndexerKit } from '../chain/indexerKit.ts';

/**
 * Two runs of one period at once (the daily job on two scheduler processes, or the job and
 * `stablebooks report` by hand), each with its own pool as two processes would have, on real
 * PostgreSQL and anvil: the second waits for the first, then runs the period again itself.
 */
const kit = await createIndexerKit('recon_lock');
const chainDeps = kit.deps();
const clock = createManualClock(new Date());
const HOUR = 3_600_000;
const reportsDir = mkdtempSync(join(tmpdir(), 'sb-recon-lock-'));

/**
 * A meeting point for the runs of one test: each run's first balanceOf waits until `parties` runs
 * have reached their proofs (or BARRIER_MS went by, when one cannot come because it waits for
 * the other), so that without the locks they would go through their checks side by side.
 */
const BARRIER_MS = 1_500;
function createBarrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    release = resolve;
  });
  return async () => {
    arrived += 1;
    if (arrived === parties) release();
    await Promise.race([all, new Promise((r) => setTimeout(r, BARRIER_MS))]);
  };
}

/** The dependencies of one "process": its own pool, logger, and chain client that meets at `barrier`. */
function processDeps(name: string, barrier: () => Promise<void>): ReconDeps & { logLines: string[] } {
  const database = createDatabase(kit.db.url, { max: 4, applicationName: `recon-lock-${name}` });
  afterAll(() => database.close());
  const rpc = chainDeps.rpc;
  let first = true;
  const client = {
    ...rpc.client,
    readContract: async (args: Parameters<PublicClient['readContract']>[0]) => {
      if (first) {
        first = false;
        await barrier();
      }
      return rpc.client.readContract(args);
    },
  } as PublicClient;
  const { logger, lines } = captureLogger({ level: 'info' });
  return {
    db: database.db,
    config: {
      stores: kit.stores,
      chains: kit.registry,
      recon: { inTransitWindowMs: HOUR, webhookWindowMs: HOUR, stuckMs: 24 * HOUR, amountTolerance: 0n },
      reportsDir,
      refundGraceMs: 24 * HOUR,
    },
    rpcs: new Map([[CHAIN_ID, { client }]]),
    logger,
    clock,
    logLines: lines,
  };
}

/** An open finding whose cause has cleared, of store st_a: every run resolves it. */
async function ghostFinding(ref: string): Promise<void> {
  await kit.db.db.execute(sql`
    insert into findings (kind, severity, store_id, ref_type, ref_id, details)
    values ('stuck_intent', 'info', 'st_a', 'checkout_intent', ${ref}, '{}'::jsonb)`);
}

async function ghostState(ref: string): Promise<{ open: number; resolved: number } | undefined> {
  const { rows } = await kit.db.db.execute<{ open: number; resolved: number }>(sql`
    select count(*) filter (where resolved_at is null)::int as open,
           count(*) filter (where resolved_at is not null)::int as resolved
    from findings where ref_id = ${ref}`);
  return rows[0];
}

function rejection(r: PromiseSettledResult<unknown>): unknown {
  return r.status === 'rejected' ? r.reason : null;
}

describe('runReconciliation: concurrent runs', () => {
  it('behavior: two concurrent runs of one period both complete, one after the other, and the row stays completed', async () => {
    await kit.raw('anvil_mine', ['0x3']);
    await indexChainPass(chainDeps, CHAIN_ID);
    // Unserialized, both runs would resolve it from two repeatable-read snapshots.
    await ghostFinding('ghost-same-period');
    const period = {
      from: new Date(clock.now().getTime() - 24 * HOUR),
      to: new Date(clock.now().getTime() + HOUR),
    };
    const order: string[] = [];
    const barrier = createBarrier(2);
    const depsA = processDeps('a', barrier);
    const depsB = processDeps('b', barrier);
    const run = (name: string, deps: ReconDeps, trigger: 'schedule' | 'cli') =>
      runReconciliation(deps, {
        period,
        trigger,
        onProgress: (p) => order.push(`${name}:${p.done}`),
      });

    const [a, b] = await Promise.allSettled([run('a', depsA, 'schedule'), run('b', depsB, 'cli')]);
    expect(rejection(a)).toBeNull();
    expect(rejection(b)).toBeNull();
    if (a.status !== 'fulfilled' || b.status !== 'fulfilled') return;
    expect(b.value.runId).toBe(a.value.runId);

    // One run did all its phases, then the other: they never overlapped.
    const runs = order.map((o) => o.split(':')[0]);
    const firstRun = runs[0];
    const switchAt = runs.findIndex((r) => r !== firstRun);
    expect(switchAt).toBeGreaterThan(0);
    expect(runs.slice(switchAt).every((r) => r !== firstRun)).toBe(true);
    // The one that waited said so.
    const waited = (firstRun === 'a' ? depsB : depsA).logLines.join('');
    expect(waited).toMatch(/another reconciliation run of this period and store is in progress/);

    const { rows } = await kit.db.db.execute<{
      status: string;
      phase: string;
      error: string | null;
      n: string;
    }>(
      sql`select status, phase, error, (select count(*) from recon_runs)::text as n
          from recon_runs where id = ${a.value.runId}::bigint`,
    );
    expect(rows[0]).toEqual({ status: 'completed', phase: 'done', error: null, n: '1' });
    expect(await ghostState('ghost-same-period')).toEqual({ open: 0, resolved: 1 });
  });

  it('behavior: runs of another store or period at once both complete: their findings transactions take turns', async () => {
    await ghostFinding('ghost-other-scope');
    const day = {
      from: new Date(clock.now().getTime() - 24 * HOUR),
      to: new Date(clock.now().getTime() + HOUR),
    };
    const week = { from: new Date(day.to.getTime() - 7 * 24 * HOUR), to: day.to };
    const barrier = createBarrier(3);
    const settled = await Promise.allSettled([
      runReconciliation(processDeps('all', barrier), { period: day }),
      runReconciliation(processDeps('st_a', barrier), { period: day, storeId: 'st_a' }),
      runReconciliation(processDeps('week', barrier), { period: week }),
    ]);
    expect(settled.map(rejection)).toEqual([null, null, null]);
    const { rows } = await kit.db.db.execute<{ store_key: string; status: string }>(sql`
      select store_key, status from recon_runs
      where period_to = ${day.to.toISOString()}::timestamptz order by period_from, store_key`);
    expect(rows).toEqual([
      { store_key: '*', status: 'completed' },
      { store_key: '*', status: 'completed' },
      { store_key: 'st_a', status: 'completed' },
    ]);
    expect(await ghostState('ghost-other-scope')).toEqual({ open: 0, resolved: 1 });
  });

  it('error: a run that breaks never marks failed the row another run of its period has claimed since', async () => {
    const period = {
      from: new Date(clock.now().getTime() - 48 * HOUR),
      to: new Date(clock.now().getTime() - 24 * HOUR),
    };
    // The run waits in its proofs until the test lets it go on; its files cannot be written.
    let letGo: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let reached: () => void = () => {};
    const atProofs = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const deps = processDeps('breaks', async () => {
      reached();
      await gate;
    });
    const broken = runReconciliation(deps, { period, outDir: '/dev/null/not-a-dir' });
    await atProofs;
    // Meanwhile another run (its lock lost with its connection, say) claimed the row and completed.
    await kit.db.db.execute(sql`
      update recon_runs set started_at = now() + interval '1 second', status = 'completed', phase = 'done',
             finished_at = now() + interval '2 seconds'
      where period_from = ${period.from.toISOString()}::timestamptz and store_key = '*'`);
    letGo();
    await expect(broken).rejects.toThrow();
    const { rows } = await kit.db.db.execute<{ status: string; phase: string; error: string | null }>(sql`
      select status, phase, error from recon_runs
      where period_from = ${period.from.toISOString()}::timestamptz and store_key = '*'`);
    expect(rows).toEqual([{ status: 'completed', phase: 'done', error: null }]);
  });
});
