import { join } from 'node:path';
import { type SQL, sql } from 'drizzle-orm';
import type { PublicClient } from 'viem';
import { type Clock, systemClock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/database.ts';
import { coerceError } from '../errors/coerceError.ts';
import { StablebooksError } from '../errors/stablebooksError.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { refundsOverdue } from '../payouts/refundsOverdue.ts';
import { type BalanceProof, proveBalances, recordProofMetrics } from './balanceProofs.ts';
import { assertProofs, assertTrialBalance } from './checks/assertions.ts';
import type { CheckContext, CheckOutcome } from './checks/checkContext.ts';
import { clearInTransit, clearRefunds, clearSuspense } from './checks/clearing.ts';
import { assertLedgerChain } from './checks/ledgerChain.ts';
import { matchClaimLinks, matchIntentCreations, matchIntents, matchStuckIntents } from './checks/matching.ts';
import { createFoundTable, type FindingsSync, syncFindings } from './foundFindings.ts';
import type { Period } from './period.ts';
import { buildReport } from './report/buildReport.ts';
import { findingsPages } from './report/reportFindings.ts';
import { FINDINGS_FULL_LIST, type ReconReport } from './report/reportModel.ts';
import { reportValuation } from './report/reportValuation.ts';
import {
  REPORT_FORMATS,
  type ReportFormat,
  type WrittenFile,
  writeReportFiles,
} from './report/writeReportFiles.ts';
import { acquireRunLock, type ReconRunLock } from './runLock.ts';

export interface ReconDeps {
  db: Db;
  config: Pick<Config, 'stores' | 'chains' | 'recon' | 'reportsDir' | 'refundGraceMs'>;
  rpcs: Map<number, { client: PublicClient }>;
  logger: Logger;
  clock?: Clock;
  /** Progress and duration of the run, and the balance-proof gauges its proofs refresh. */
  metrics?: Pick<Metrics, 'reconProgress' | 'reconRunSeconds' | 'balanceProofOk' | 'balanceProofDrift'>;
}

export interface ReconOptions {
  period: Period;
  /** null or absent: every store. */
  storeId?: string | null;
  formats?: readonly ReportFormat[];
  /** Where the files go; default REPORTS_DIR/<store or all>/<from>_<to>. */
  outDir?: string;
  trigger?: 'cli' | 'schedule';
  onProgress?: (progress: ReconProgress) => void;
}

export interface ReconProgress {
  phase: (typeof PHASES)[number];
  /** Phases finished so far, of `total`. */
  done: number;
  total: number;
}

export interface ReconResult {
  runId: string;
  status: 'completed';
  passed: boolean;
  report: ReconReport;
  findings: FindingsSync;
  files: WrittenFile[];
  dir: string;
  durationMs: number;
}

/**
 * The run's queries group and join every intent, webhook, transfer and in_transit posting of the
 * history (about a million of each for a busy store's month): with PostgreSQL's default 4 MB per
 * sort or hash they spill to disk. The run's two transactions raise it for themselves (`set
 * local`, back to the server's setting at commit); it is server memory, a few such nodes at once,
 * never this process's.
 */
const WORK_MEM = sql.raw(`set local work_mem = '128MB'`);

/** A mistake in what was asked (unknown store): retrying cannot help; fix the command. */
export class ReconInputError extends StablebooksError {
  override readonly name = 'ReconInputError';
  readonly retryable = false;
}

const PHASES = [
  'proofs',
  'refunds',
  'clearing',
  'matching',
  'assertions',
  'findings',
  'report',
  'files',
] as const;

/**
 * One reconciliation run for a period and store (docs/accounting.md, "Findings"): balance proofs at each
 * chain's finalized block, then the three layers of set-based checks in one repeatable-read
 * transaction with the findings they produce (opened, refreshed, resolved), then the report read
 * in one snapshot and written in every asked format. The run's row in recon_runs (one per period
 * and store) is replaced by a rerun, as are its files. A run that breaks is recorded `failed`
 * with its reason, and the error is thrown to the caller (the job retries; the CLI prints it).
 *
 * Runs take turns (runLock.ts): a run of a period and store that another run is doing waits for
 * it, then runs the period again; the findings transactions of any two runs take turns too. A
 * run writes its row only while the row is still its own (running, with its start time), so a run
 * that breaks can never mark another run's row `failed`.
 *
 * A store-scoped run proves the wallets of its store only (a wallet it shares with other stores,
 * such as a business's custody wallet, with all of their accounts), resolves the
 * balance_proof_failed findings of those wallets, and leaves the balance-proof gauges to the
 * unscoped runs and the prove job: a gauge is the worst over every store's wallets.
 */
export async function runReconciliation(deps: ReconDeps, options: ReconOptions): Promise<ReconResult> {
  const storeId = options.storeId ?? null;
  if (storeId !== null && !deps.config.stores.some((s) => s.storeId === storeId))
    throw new ReconInputError(`store ${storeId} is not in STORES_FILE`);
  const formats = options.formats ?? REPORT_FORMATS;
  const storeKey = storeId ?? '*';
  const { from, to } = options.period;
  const dir = options.outDir ?? join(deps.config.reportsDir, storeId ?? 'all', `${stamp(from)}_${stamp(to)}`);
  const lock = await acquireRunLock(deps.db, options.period, storeKey, async () => {
    const { rows } = await deps.db.execute<{ id: string; trigger: string; phase: string | null }>(sql`
      select id::text, trigger, phase from recon_runs
      where period_from = ${from.toISOString()}::timestamptz and period_to = ${to.toISOString()}::timestamptz
        and store_key = ${storeKey}`);
    deps.logger.warn(
      { storeId, from: from.toISOString(), to: to.toISOString(), running: rows[0] ?? null },
      'another reconciliation run of this period and store is in progress: waiting for it, then running the period again',
    );
  });
  try {
    return await lockedRun(deps, options, { lock, storeId, storeKey, formats, dir });
  } finally {
    await lock.release();
  }
}

type PhaseName = (typeof PHASES)[number];

/** Does one phase's work, first telling that it begins (onProgress, the progress gauge, the run's row). */
type RunPhase = <T>(name: PhaseName, work: () => Promise<T>) => Promise<T>;

/** This run's row in recon_runs, written through the lock's connection while `own` holds. */
interface RunRow {
  db: Db;
  runId: string;
  own: SQL;
}

async function lockedRun(
  deps: ReconDeps,
  options: ReconOptions,
  run: {
    lock: ReconRunLock;
    storeId: string | null;
    storeKey: string;
    formats: readonly ReportFormat[];
    dir: string;
  },
): Promise<ReconResult> {
  const clock = deps.clock ?? systemClock;
  const { lock, storeId, storeKey, formats, dir } = run;
  // The run's duration, from when it holds its lock: the wait for another run is not its own.
  const startedAt = performance.now();
  const { id: runId, startedAt: token } = await startRun(lock.db, options, storeKey, storeId);
  // Every write of the row is guarded: it is this run's only while running with its start time.
  const own = sql`id = ${runId}::bigint and status = 'running' and started_at = ${token}::timestamptz`;
  const row: RunRow = { db: lock.db, runId, own };
  const phase = phaseRunner(deps, options, row);

  try {
    const now = clock.now();
    const proofs: BalanceProof[] = await phase('proofs', () =>
      proveBalances({ db: deps.db, config: deps.config, rpcs: deps.rpcs, clock }, { storeId }),
    );
    if (deps.metrics && storeId === null) recordProofMetrics(deps.metrics, proofs);
    await phase('refunds', () =>
      refundsOverdue(
        { db: deps.db, refundGraceMs: deps.config.refundGraceMs, logger: deps.logger },
        now,
        storeId,
      ),
    );
    const { outcomes, sync } = await checkAndSyncFindings(deps, lock, phase, { storeId, now, proofs });
    const { report, files } = await buildAndWriteReport(deps, phase, clock, {
      period: options.period,
      storeId,
      formats,
      dir,
      outcomes,
      proofs,
    });
    const durationMs = Math.round(performance.now() - startedAt);
    return await completeRun(deps, options, row, { storeId, dir, report, files, sync, durationMs });
  } catch (err) {
    await failRun(deps, row, startedAt, err);
    throw err;
  }
}

/** The run's phases: each tells that it begins, then does its work, and counts as done after it. */
function phaseRunner(deps: ReconDeps, options: ReconOptions, row: RunRow): RunPhase {
  let phaseIndex = 0;
  return async <T>(name: PhaseName, work: () => Promise<T>): Promise<T> => {
    const progress = { phase: name, done: phaseIndex, total: PHASES.length };
    options.onProgress?.(progress);
    deps.metrics?.reconProgress.reset();
    deps.metrics?.reconProgress.set({ phase: name }, phaseIndex / PHASES.length);
    await row.db.execute(sql`update recon_runs set phase = ${name} where ${row.own}`);
    const result = await work();
    phaseIndex += 1;
    return result;
  };
}

/**
 * The three layers of checks and the findings they produce (opened, refreshed, resolved), in one
 * repeatable-read transaction holding the findings lock.
 */
async function checkAndSyncFindings(
  deps: ReconDeps,
  lock: ReconRunLock,
  phase: RunPhase,
  run: { storeId: string | null; now: Date; proofs: BalanceProof[] },
): Promise<{ outcomes: CheckOutcome[]; sync: FindingsSync }> {
  const { storeId, now, proofs } = run;
  return await lock.withFindingsLock(() =>
    deps.db.transaction(
      async (tx) => {
        const ctx: CheckContext = {
          tx,
          storeId,
          now,
          settings: deps.config.recon,
          chains: deps.config.chains,
        };
        await tx.execute(WORK_MEM);
        await createFoundTable(tx);
        const outcomes = await runChecks(ctx, phase, proofs);
        const sync = await phase('findings', () =>
          // Each check says what it decided: one that could not read its source owns nothing, and
          // the proofs own their kind even when some wallet could not be proven (that wallet's
          // finding is in recon_found, so it stays open; the wallets that now pass resolve).
          syncFindings(
            tx,
            outcomes.flatMap((o) => o.owned),
            storeId,
          ),
        );
        return { outcomes, sync };
      },
      { isolationLevel: 'repeatable read' },
    ),
  );
}

/** Clearing, matching and assertions, in that order, each check in its turn. */
async function runChecks(
  ctx: CheckContext,
  phase: RunPhase,
  proofs: BalanceProof[],
): Promise<CheckOutcome[]> {
  const outcomes: CheckOutcome[] = [];
  await phase('clearing', async () => {
    outcomes.push(await clearInTransit(ctx), await clearRefunds(ctx), await clearSuspense(ctx));
  });
  await phase('matching', async () => {
    outcomes.push(
      await matchIntents(ctx),
      await matchStuckIntents(ctx),
      await matchIntentCreations(ctx),
      await matchClaimLinks(ctx),
    );
  });
  await phase('assertions', async () => {
    outcomes.push(
      await assertProofs(ctx, proofs),
      await assertTrialBalance(ctx),
      await assertLedgerChain(ctx),
    );
  });
  return outcomes;
}

/** The report of the period, written in every asked format into `dir`. */
async function buildAndWriteReport(
  deps: ReconDeps,
  phase: RunPhase,
  clock: Clock,
  run: {
    period: Period;
    storeId: string | null;
    formats: readonly ReportFormat[];
    dir: string;
    outcomes: CheckOutcome[];
    proofs: BalanceProof[];
  },
): Promise<{ report: ReconReport; files: WrittenFile[] }> {
  const { storeId, formats, dir, outcomes, proofs } = run;
  // The report and its files are read in one snapshot: findings.csv is streamed from a cursor
  // of this transaction, so it lists exactly the findings the report counts.
  const scope = { period: run.period, storeId, generatedAt: clock.now() };
  // Before the report's snapshot: it records the missing rates as findings, which the report then
  // lists like every other finding. The figures are of postings dated before the period's end.
  const valuation = await reportValuation(deps.db, deps.config.stores, run.period, storeId);
  return await deps.db.transaction(
    async (tx) => {
      await tx.execute(WORK_MEM);
      const report = await phase('report', () =>
        buildReport(tx, {
          ...scope,
          chains: deps.config.chains,
          checks: outcomes.map((o) => o.result),
          proofs,
          findingsFullList: formats.includes('csv') ? FINDINGS_FULL_LIST : null,
          valuation,
        }),
      );
      const files = await phase('files', () =>
        writeReportFiles(report, dir, formats, () => findingsPages(tx, scope), {
          chains: deps.config.chains,
        }),
      );
      return { report, files };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/**
 * Records the run `completed`, with its counts and files, on its row while the row is still its
 * own; then tells it (progress gauge, duration, onProgress, log) and returns the run's result.
 */
async function completeRun(
  deps: ReconDeps,
  options: ReconOptions,
  row: RunRow,
  run: {
    storeId: string | null;
    dir: string;
    report: ReconReport;
    files: WrittenFile[];
    sync: FindingsSync;
    durationMs: number;
  },
): Promise<ReconResult> {
  const { runId, own } = row;
  const { storeId, dir, report, files, sync, durationMs } = run;
  const { from, to } = options.period;
  const counts = runCounts(report, sync);
  const completed = await row.db.execute(sql`
      update recon_runs set status = 'completed', passed = ${report.passed}, phase = 'done',
             finished_at = now(), duration_ms = ${durationMs}, counts = ${JSON.stringify(counts)}::jsonb,
             files = ${JSON.stringify(files.map((f) => ({ name: f.name, path: f.path, sha256: f.sha256, bytes: f.bytes })))}::jsonb
      where ${own}`);
  if (completed.rowCount !== 1)
    throw new Error(
      `recon_runs: run ${runId} of this period was restarted by another run while this one ran; its result is not recorded`,
    );
  deps.metrics?.reconProgress.reset();
  deps.metrics?.reconProgress.set({ phase: 'done' }, 1);
  deps.metrics?.reconRunSeconds.observe({ outcome: 'completed' }, durationMs / 1000);
  options.onProgress?.({ phase: 'files', done: PHASES.length, total: PHASES.length });
  deps.logger.info(
    {
      runId,
      storeId,
      from: from.toISOString(),
      to: to.toISOString(),
      passed: report.passed,
      durationMs,
      ...counts.findings,
    },
    'reconciliation run completed',
  );
  return {
    runId,
    status: 'completed',
    passed: report.passed,
    report,
    findings: sync,
    files,
    dir,
    durationMs,
  };
}

/** The run row's counts: the report's findings, what the findings sync did, and the checks by status. */
function runCounts(
  report: ReconReport,
  sync: FindingsSync,
): {
  findings: ReconReport['findings']['counts'];
  sync: FindingsSync;
  checks: Record<string, number>;
  ledger_chain: { seq: string; hash: string } | null;
} {
  const head = report.ledgerChain.atGeneration;
  return {
    // The head this run published: the next run's chain check recomputes the chain up to it
    // (src/recon/checks/ledgerChain.ts), so resealing the chain after a rewrite is caught even
    // without a report kept outside.
    ledger_chain: head === null ? null : { seq: head.seq, hash: head.hash },
    findings: {
      ...report.findings.counts,
    },
    sync,
    checks: Object.fromEntries(
      (['pass', 'fail', 'error'] as const).map((s) => [
        s,
        report.checks.filter((c) => c.status === s).length,
      ]),
    ),
  };
}

/** Records the run `failed` with the first line of its reason, while its row is still its own. */
async function failRun(deps: ReconDeps, row: RunRow, startedAt: number, err: unknown): Promise<void> {
  const message = coerceError(err).message.split('\n')[0] ?? 'unknown error';
  const durationMs = Math.round(performance.now() - startedAt);
  // Through the pool, not the lock's connection, which may be the thing that broke.
  await deps.db
    .execute(sql`
        update recon_runs set status = 'failed', finished_at = now(), duration_ms = ${durationMs}, error = ${message}
        where ${row.own}`)
    .catch(() => undefined);
  deps.metrics?.reconRunSeconds.observe({ outcome: 'failed' }, durationMs / 1000);
}

/** 2026-11-21T00:00:00.000Z → 20261121T000000Z: a file name every system accepts. */
function stamp(t: Date): string {
  return t
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** Claims the period's row for this run: its id, and its start time, which tells the row is still this run's. */
async function startRun(
  db: Db,
  options: ReconOptions,
  storeKey: string,
  storeId: string | null,
): Promise<{ id: string; startedAt: string }> {
  const { rows } = await db.execute<{ id: string; started_at: string }>(sql`
    insert into recon_runs (period_from, period_to, store_key, store_id, trigger, status, phase, started_at)
    values (${options.period.from.toISOString()}::timestamptz, ${options.period.to.toISOString()}::timestamptz,
            ${storeKey}, ${storeId}, ${options.trigger ?? 'cli'}, 'running', 'start', now())
    on conflict (period_from, period_to, store_key) do update set
      trigger = excluded.trigger, status = 'running', passed = null, phase = 'start', started_at = now(),
      finished_at = null, duration_ms = null, counts = '{}'::jsonb, files = '[]'::jsonb, error = null
    returning id::text, started_at::text`);
  const row = rows[0];
  if (!row) throw new Error('recon_runs: the run row was not written');
  return { id: row.id, startedAt: row.started_at };
}
