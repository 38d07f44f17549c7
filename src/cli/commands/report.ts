import type { Command } from 'commander';
import type { ChainHeadRow } from '../../recon/report/reportModel.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

/** Exit status when the run completed but the books are not proven (a proof or the trial balance failed). */
const EXIT_NOT_PROVEN = 3;

interface ReportOptions {
  from?: string;
  to?: string;
  store?: string;
  format?: string;
  out?: string;
  json?: boolean;
}

/**
 * `stablebooks report`: one reconciliation run now, for a period (default: the previous UTC day)
 * and a store (default: all), writing the report files. Progress goes to stderr, the summary to
 * stdout. Exit 0 when the books are proven, 3 when the run found them not proven.
 */
export function registerReport(program: Command): void {
  program
    .command('report')
    .description('run a reconciliation now and write its report (JSON, CSV, Markdown, HTML)')
    .option('--from <time>', 'start of the period, a date (UTC midnight) or ISO time; default: yesterday')
    .option('--to <time>', 'end of the period (excluded); default: one day after --from')
    .option('--store <id>', 'only this store (default: every store)')
    .option('--format <list>', 'comma-separated: json,csv,md,html (default: all)')
    .option('--out <dir>', 'write the files here (default: REPORTS_DIR/<store|all>/<from>_<to>)')
    .option('--json', 'print the summary as JSON')
    .action(async (opts: ReportOptions) => {
      const [
        { loadConfig },
        { createDatabase },
        { createChainRpcs },
        { createMetrics },
        { createLogger },
        { createFollowedClock },
        { systemClock },
        { parsePeriod, PeriodError },
        { runReconciliation, ReconInputError },
        { REPORT_FORMATS },
      ] = await Promise.all([
        import('../../config/loadConfig.ts'),
        import('../../db/database.ts'),
        import('../../chain/rpcClients.ts'),
        import('../../metrics/metrics.ts'),
        import('../../logging/logger.ts'),
        import('../../followedClock.ts'),
        import('../../clock.ts'),
        import('../../recon/period.ts'),
        import('../../recon/runReconciliation.ts'),
        import('../../recon/report/writeReportFiles.ts'),
      ]);
      const formats = (opts.format ?? REPORT_FORMATS.join(','))
        .split(',')
        .map((f) => f.trim())
        .filter(Boolean);
      const unknown = formats.filter((f) => !(REPORT_FORMATS as readonly string[]).includes(f));
      if (unknown.length > 0 || formats.length === 0)
        throw new CliError(
          `--format: ${unknown.join(',') || '(empty)'} is not one of ${REPORT_FORMATS.join(', ')}`,
        );

      const config = loadConfig(process.env);
      let clock = systemClock;
      if (config.clockUrl) {
        const followed = createFollowedClock(config.clockUrl);
        await followed.start();
        followed.stop();
        clock = followed;
      }
      let period: ReturnType<typeof parsePeriod>;
      try {
        period = parsePeriod(opts.from, opts.to, clock.now());
      } catch (err) {
        if (err instanceof PeriodError) throw new CliError(err.message);
        throw err;
      }
      if (opts.store !== undefined && !config.stores.some((s) => s.storeId === opts.store))
        throw new CliError(`--store: ${opts.store} is not in STORES_FILE`);

      const database = createDatabase(config.databaseUrl, { max: 2, applicationName: 'stablebooks report' });
      const metrics = createMetrics();
      try {
        const started = Date.now();
        const result = await runReconciliation(
          {
            db: database.db,
            config,
            rpcs: createChainRpcs(config, metrics),
            logger: createLogger({ level: 'warn', secrets: config.stores.map((s) => s.apiSecret) }),
            clock,
            metrics,
          },
          {
            period,
            storeId: opts.store ?? null,
            formats: formats as (typeof REPORT_FORMATS)[number][],
            outDir: opts.out,
            trigger: 'cli',
            onProgress: (p) =>
              process.stderr.write(
                `reconciliation: ${p.done === p.total ? 'done' : p.phase} (${p.done}/${p.total}) ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
              ),
          },
        ).catch((err: unknown) => {
          if (err instanceof ReconInputError) throw new CliError(err.message);
          throw err;
        });
        const r = result.report;
        const summary = {
          run_id: result.runId,
          passed: result.passed,
          period: r.period,
          store_id: r.storeId,
          checks: r.checks,
          findings: {
            ...r.findings.counts,
            by_kind: r.findings.byKind,
          },
          balance_proofs: r.balanceProofs.map((p) => ({
            chain_id: p.chainId,
            token: p.symbol,
            role: p.role,
            result: p.result,
            error: p.error,
          })),
          ledger_chain: r.ledgerChain,
          valuation: r.valuation,
          dir: result.dir,
          files: result.files.map((f) => ({ name: f.name, path: f.path, sha256: f.sha256, bytes: f.bytes })),
          duration_ms: result.durationMs,
        };
        printResult(opts.json, summary, () =>
          [
            `${result.passed ? 'PASS' : 'FAIL'}: books ${result.passed ? 'proven' : 'NOT proven'} for ${r.period.from} .. ${r.period.to}, ${r.storeId ?? 'every store'}`,
            renderTable(
              ['check', 'status', 'count', 'detail'],
              r.checks.map((c) => [c.name, c.status, String(c.count), c.detail]),
              [2],
            ),
            `findings: ${summary.findings.new} new, ${summary.findings.open} still open, ${summary.findings.resolved} resolved`,
            ...r.valuation.map((v) => {
              const shown = (value: string | null) => value ?? 'unvalued';
              return `${v.storeId} in ${v.currency}: revenue ${shown(v.revenue.value)}, service fees ${shown(v.serviceFees.value)}, payouts ${shown(v.payouts.value)}, FX result ${shown(v.fxResult)}`;
            }),
            `ledger chain at period end: ${chainHeadText(r.ledgerChain.atPeriodEnd)}; now: ${chainHeadText(r.ledgerChain.atGeneration)} (check later with stablebooks ledger verify --head <seq:hash>)`,
            `report: ${result.dir} (${result.files.length} files)`,
          ].join('\n'),
        );
        if (!result.passed) process.exitCode = EXIT_NOT_PROVEN;
      } finally {
        await database.close();
      }
    });
}

function chainHeadText(head: ChainHeadRow | null): string {
  return head === null ? 'no entry sealed' : `${head.seq}:${head.hash}`;
}
