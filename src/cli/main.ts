import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/errors.ts';
import { coerceError } from '../errors/coerceError.ts';
import { terminalSafe } from '../text/terminalSafe.ts';
import { CliError, EXIT_USAGE } from './CliError.ts';
import { registerAdjust } from './commands/adjust.ts';
import { registerDemo } from './commands/demo.ts';
import { registerDoctor } from './commands/doctor.ts';
import { registerExport } from './commands/export.ts';
import { registerFindings } from './commands/findings.ts';
import { registerIntents } from './commands/intents.ts';
import { registerLedger } from './commands/ledger.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerPayouts } from './commands/payouts.ts';
import { registerRates } from './commands/rates.ts';
import { registerReport } from './commands/report.ts';
import { registerSandbox } from './commands/sandbox.ts';
import { registerStart } from './commands/start.ts';
import { registerSuspense } from './commands/suspense.ts';
import { registerWebhooks } from './commands/webhooks.ts';
import { loadEnvFile } from './envFile.ts';
import { printNote } from './output.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Builds the `stablebooks` command. Commands are thin: they parse options and call src/ modules. */
export function buildProgram(): Command {
  const program = new Command('stablebooks')
    .description('reconciliation and double-entry ledger daemon for stable-coin payments')
    .version(version, '-V, --version', 'print the version of stablebooks')
    // commander's own errors (unknown option or command, missing argument) are thrown, not
    // printed: reportError prints them as it prints every other error. Set before the commands
    // are added, which inherit both.
    .configureOutput({ outputError: () => {} })
    .exitOverride()
    // Not --env-file: Node.js 20 takes a script argument of that name for its own option (and
    // exits 9 on a missing file before stablebooks runs), nodejs/node#54232.
    .option('--dotenv <path>', 'read variables from this file instead of ./.env (the environment wins)')
    .option('--no-dotenv', 'read no .env file, only the environment')
    // Before any command's action, which is where each reads its configuration.
    .hook('preAction', () => {
      loadEnvFile(program.opts<{ dotenv?: string | false }>().dotenv);
    });
  registerMigrate(program);
  registerStart(program);
  registerDoctor(program);
  registerIntents(program);
  registerPayouts(program);
  registerRates(program);
  registerLedger(program);
  registerExport(program);
  registerReport(program);
  registerFindings(program);
  registerSuspense(program);
  registerAdjust(program);
  registerWebhooks(program);
  registerSandbox(program);
  registerDemo(program);
  return program;
}

/** Runs the CLI; any failure becomes one readable line on stderr and a non-zero exit status. */
export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (err) {
    process.exitCode = reportError(err);
  }
}

function reportError(err: unknown): number {
  if (err instanceof CommanderError) {
    // --help and --version printed their text; so did a bare `stablebooks` (help, on stderr).
    if (err.exitCode === 0) return 0;
    if (err.code === 'commander.help') return EXIT_USAGE;
    const message = err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
    printNote(`${message} (run with --help for usage)`);
    return EXIT_USAGE;
  }
  if (err instanceof ConfigError) {
    // One problem is one line; several are listed under one line, all at once.
    if (err.problems.length === 1) printNote(err.problems[0] ?? '');
    else process.stderr.write(`stablebooks: ${terminalSafe(err.message, { newlines: true })}\n`);
    return EXIT_USAGE;
  }
  const message = coerceError(err).message;
  printNote(message.split('\n')[0] ?? '');
  return err instanceof CliError ? err.exitCode : 1;
}
