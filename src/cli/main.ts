import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/errors.ts';
import { coerceError } from '../errors/coerceError.ts';
import { CliError } from './CliError.ts';
import { registerDemo } from './commands/demo.ts';
import { registerDoctor } from './commands/doctor.ts';
import { registerFindings } from './commands/findings.ts';
import { registerIntents } from './commands/intents.ts';
import { registerLedger } from './commands/ledger.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerPayouts } from './commands/payouts.ts';
import { registerReport } from './commands/report.ts';
import { registerSandbox } from './commands/sandbox.ts';
import { registerStart } from './commands/start.ts';
import { registerWebhooks } from './commands/webhooks.ts';

/** Builds the `stablebooks` command. Commands are thin: they parse options and call src/ modules. */
export function buildProgram(): Command {
  const program = new Command('stablebooks')
    .description('reconciliation and double-entry ledger daemon for stable-coin payments')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerMigrate(program);
  registerStart(program);
  registerDoctor(program);
  registerIntents(program);
  registerPayouts(program);
  registerLedger(program);
  registerReport(program);
  registerFindings(program);
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
    // commander already printed its message (or the help/version text).
    return err.exitCode;
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`stablebooks: ${err.message}\n`);
    return 2;
  }
  const message = coerceError(err).message;
  process.stderr.write(`stablebooks: ${message.split('\n')[0]}\n`);
  return err instanceof CliError ? err.exitCode : 1;
}
