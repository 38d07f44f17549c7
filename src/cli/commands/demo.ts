import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

/** Exit status when the demo ran but an invariant failed or a planted problem was not found. */
const EXIT_NOT_PROVEN = 3;

interface DemoCliOptions {
  intents: string;
  payouts: string;
  seed: string;
  out: string;
  keep?: boolean;
  json?: boolean;
}

/**
 * `stablebooks demo`: the whole system on ephemeral local services, a seeded scenario with
 * planted problems, one reconciliation, and what it found. Progress goes to stderr; the summary
 * (text, or one JSON object with --json) to stdout. With --keep everything stays up until Ctrl-C.
 */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'run everything on throwaway local services with a seeded scenario, then reconcile and summarise',
    )
    .option('--intents <n>', 'checkout intents in the scenario', '200')
    .option('--payouts <n>', 'claim links in the scenario', '20')
    .option('--seed <seed>', 'same seed, same scenario and summary', 'stablebooks')
    .option('--out <dir>', 'where the reports and the daemon log go', 'demo-output')
    .option('--keep', 'leave everything running and print the URLs; Ctrl-C stops it')
    .option('--json', 'print the summary as one JSON object')
    .action(async (opts: DemoCliOptions) => {
      const intents = wholeNumber('--intents', opts.intents);
      const payouts = wholeNumber('--payouts', opts.payouts);
      const [{ runDemo }, { ScenarioSizeError }, { renderDemoSummary }, { keepRunning }] = await Promise.all([
        import('../../demo/runDemo.ts'),
        import('../../demo/demoScenario.ts'),
        import('../../demo/renderDemoSummary.ts'),
        import('../../demo/keepRunning.ts'),
      ]);
      const startedAt = Date.now();
      const progress = (line: string) =>
        process.stderr.write(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(3)} s] ${line}\n`);
      // Ctrl-C while the scenario runs: exit at once; the exit hook of src/devservices kills the
      // servers the demo started (with --keep, Ctrl-C after the summary stops them one by one).
      const interrupted = () => {
        progress('interrupted: stopping every service the demo started');
        process.exit(130);
      };
      process.once('SIGINT', interrupted);
      process.once('SIGTERM', interrupted);
      let run: Awaited<ReturnType<typeof runDemo>>;
      try {
        run = await runDemo({ intents, payouts, seed: opts.seed, outDir: resolve(opts.out), progress });
      } catch (err) {
        if (err instanceof ScenarioSizeError) throw new CliError(err.message);
        throw err;
      } finally {
        process.off('SIGINT', interrupted);
        process.off('SIGTERM', interrupted);
      }
      printResult(opts.json, run.summary, renderDemoSummary);
      if (!run.summary.passed) process.exitCode = EXIT_NOT_PROVEN;
      if (opts.keep) await keepRunning(run, resolve(opts.out), progress);
      else await run.stop();
    });
}

function wholeNumber(flag: string, text: string): number {
  if (!/^\d+$/.test(text)) throw new CliError(`${flag}: ${text} is not a whole number`);
  return Number(text);
}
