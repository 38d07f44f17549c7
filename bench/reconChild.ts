/**
 * The child process of bench/recon.ts: one reconciliation run, measured (wall time, phases, peak
 * RSS), reported to the parent over IPC. A file of its own, so that the process loads only what
 * the run needs (config, database, logger, runReconciliation), not the fill's modules (viem, the
 * posting rules, pg-copy-streams): its memory is the run's, as a `stablebooks report` process's.
 * Started by bench/recon.ts with the parent's execArgv (tsx); its environment is the run's config
 * plus BENCH_FROM, BENCH_TO, BENCH_OUT_DIR, BENCH_FORMATS and BENCH_STORE_ID.
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { PublicClient } from 'viem';
import { loadConfig } from '../src/config/loadConfig.ts';
import { createDatabase } from '../src/db/database.ts';
import { createLogger } from '../src/logging/logger.ts';
import type { ReportFormat } from '../src/recon/report/writeReportFiles.ts';
import type { ReconProgress, ReconResult } from '../src/recon/runReconciliation.ts';
import { fmt, log } from './benchKit.ts';

/** Loaded at run time (see childMain), so that a missing or broken module gives a clear message. */
type RunReconciliation = typeof import('../src/recon/runReconciliation.ts').runReconciliation;

export interface PhaseTiming {
  phase: string;
  ms: number;
  done: number;
  total: number;
}

export interface ChildReport {
  ok: boolean;
  error?: string;
  wallMs?: number;
  peakRss?: number;
  maxRss?: number;
  rssBefore?: number;
  phases?: PhaseTiming[];
  runId?: string;
  status?: string;
  passed?: boolean;
  durationMs?: number;
  files?: { path: string; sha256: string; bytes: number }[];
}

const ALL_FORMATS: readonly ReportFormat[] = ['json', 'csv', 'md', 'html'];
const FORMATS: ReportFormat[] = (process.env.BENCH_FORMATS ?? ALL_FORMATS.join(','))
  .split(',')
  .map((f) => f.trim())
  .filter((f): f is ReportFormat => (ALL_FORMATS as readonly string[]).includes(f));
const STORE_ID = process.env.BENCH_STORE_ID ?? 'st_bench';

async function childMain(): Promise<void> {
  const send = (r: ChildReport) =>
    new Promise<void>((resolve) => {
      if (process.send) process.send(r, undefined, {}, () => resolve());
      else resolve();
    });
  const moduleUrl = new URL('../src/recon/runReconciliation.ts', import.meta.url);
  const modulePath = fileURLToPath(moduleUrl);
  let run: RunReconciliation;
  try {
    const mod: Record<string, unknown> = await import(moduleUrl.href);
    if (typeof mod.runReconciliation !== 'function')
      throw new Error('it exports no runReconciliation function');
    run = mod.runReconciliation as RunReconciliation;
  } catch (err) {
    await send({
      ok: false,
      error: `cannot load ${modulePath}: ${err instanceof Error ? err.message : String(err)} (is src/recon/runReconciliation.ts written yet?)`,
    });
    return;
  }
  const config = loadConfig(process.env);
  const database = createDatabase(config.databaseUrl, { max: 4, applicationName: 'stablebooks-bench-recon' });
  const logger = createLogger({ level: 'warn', name: 'bench-recon' });
  const from = new Date(process.env.BENCH_FROM ?? '');
  const to = new Date(process.env.BENCH_TO ?? '');
  const outDir = process.env.BENCH_OUT_DIR ?? os.tmpdir();
  try {
    const rssBefore = process.memoryUsage().rss;
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 50);
    const phases: PhaseTiming[] = [];
    let current: (PhaseTiming & { startedAt: number }) | undefined;
    let lastLogged = 0;
    const t0 = performance.now();
    const closePhase = (now: number) => {
      if (current)
        phases.push({
          phase: current.phase,
          ms: now - current.startedAt,
          done: current.done,
          total: current.total,
        });
    };
    const onProgress = (p: ReconProgress) => {
      const now = performance.now();
      if (current?.phase !== p.phase) {
        closePhase(now);
        current = { phase: p.phase, ms: 0, done: p.done, total: p.total, startedAt: now };
        log(`  run: phase ${p.phase} (${fmt(p.done)}/${fmt(p.total)})`);
        lastLogged = now;
      } else {
        current.done = p.done;
        current.total = p.total;
        if (now - lastLogged > 1000) {
          log(`  run: phase ${p.phase} ${fmt(p.done)}/${fmt(p.total)}`);
          lastLogged = now;
        }
      }
    };
    let result: ReconResult;
    try {
      result = await run(
        { db: database.db, config, rpcs: new Map<number, { client: PublicClient }>(), logger },
        { period: { from, to }, storeId: STORE_ID, formats: FORMATS, outDir, onProgress },
      );
    } finally {
      clearInterval(sampler);
    }
    const end = performance.now();
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    closePhase(end);
    await send({
      ok: true,
      wallMs: end - t0,
      peakRss,
      maxRss: process.resourceUsage().maxRSS * 1024,
      rssBefore,
      phases,
      runId: result.runId,
      status: result.status,
      passed: result.passed,
      durationMs: result.durationMs,
      files: result.files,
    });
  } catch (err) {
    await send({ ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  } finally {
    await database.close();
  }
}

childMain().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
