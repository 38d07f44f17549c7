import { type Command, Option } from 'commander';
import { EXPORT_FORMATS, type ExportFormat, ExportInputError } from '../../export/exportModel.ts';
import { openJournalOutput } from '../../export/journalOutput.ts';
import { PeriodError, parseTime } from '../../recon/period.ts';
import { CliError, EXIT_USAGE } from '../CliError.ts';
import { printNote } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';

interface ExportCliOptions {
  format: ExportFormat;
  from?: string;
  to?: string;
  store?: string;
  out?: string;
  value?: string;
}

/**
 * `stablebooks export`: the ledger as a journal for hledger, beancount or ledger, or as CSV, for a
 * period (by when movements happened; --to excluded), with the balances before --from as an
 * opening transaction. Bad input is one line and exit 2, with nothing written.
 */
export function registerExport(program: Command): void {
  program
    .command('export')
    .description(
      'write the ledger as an hledger, beancount or ledger journal, or as CSV (one row per posting)',
    )
    .addOption(
      new Option('--format <format>', 'the tool the file is for')
        .choices([...EXPORT_FORMATS])
        .makeOptionMandatory(),
    )
    .option(
      '--from <time>',
      'start of the period, a date (UTC midnight) or ISO time; balances before it open the file',
    )
    .option('--to <time>', 'end of the period (excluded)')
    .option('--store <id>', 'only this store (default: every store)')
    .option(
      '--out <file>',
      'write this file (through a temporary file, renamed when complete); default: stdout',
    )
    .option(
      '--value <currency>',
      'add each posting\'s value in this currency: `@@ value CUR` in the journals, columns in csv (docs/accounting.md, "Valuation")',
    )
    .action(async (opts: ExportCliOptions) => {
      if (opts.value !== undefined && !/^[A-Z]{3}$/.test(opts.value))
        throw new CliError(
          `--value: ${JSON.stringify(opts.value)} is not an ISO 4217 code in capitals, e.g. EUR`,
          EXIT_USAGE,
        );
      const value =
        opts.value === undefined
          ? undefined
          : { currency: opts.value, stores: await (await import('./ledgerValue.ts')).storesPar(opts.value) };
      let from: Date | null = null;
      let to: Date | null = null;
      try {
        if (opts.from !== undefined) from = parseTime('--from', opts.from);
        if (opts.to !== undefined) to = parseTime('--to', opts.to);
      } catch (err) {
        if (err instanceof PeriodError) throw new CliError(err.message, EXIT_USAGE);
        throw err;
      }
      if (from && to && from >= to) throw new CliError('--from must be before --to', EXIT_USAGE);
      const { exportJournal } = await import('../../export/exportJournal.ts');
      await withDatabase({ max: 1, applicationName: 'stablebooks export' }, async (db) => {
        try {
          const result = await exportJournal(
            db,
            { format: opts.format, storeId: opts.store ?? null, from, to, value },
            () => openJournalOutput(opts.out),
          );
          for (const warning of result.warnings) printNote(`warning: ${warning}`);
          if (opts.out !== undefined)
            printNote(
              `${result.entries} entries, ${result.postings} postings and ${result.openingLines} opening balances written to ${opts.out}`,
            );
        } catch (err) {
          if (err instanceof ExportInputError) throw new CliError(err.message, EXIT_USAGE);
          throw err;
        }
      });
    });
}
