import type { Command } from 'commander';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';

/** `stablebooks rates import FILE.csv`: the merchant's daily rates for the valuation. */
export function registerRates(program: Command): void {
  const rates = program
    .command('rates')
    .description('exchange rates that value the books in the functional currency');

  rates
    .command('import')
    .description('import daily rates from a CSV (date,asset,currency,rate); all or nothing, idempotent')
    .argument('<file>', 'CSV file with the header date,asset,currency,rate')
    .option('--json', 'machine-readable output')
    .action(async (file: string, opts: { json?: boolean }) => {
      const [{ readFile }, { parseRatesCsv }] = await Promise.all([
        import('node:fs/promises'),
        import('../../rates/parseRatesCsv.ts'),
      ]);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new CliError(`${file}: ${code === 'ENOENT' ? 'file not found' : 'cannot be read'}`);
      }
      const parsed = parseRatesCsv(text);
      if (!parsed.ok)
        throw new CliError(`${file}: line ${parsed.line}: ${parsed.message}; nothing was imported`);
      const { importRates, RateConflictError } = await import('../../rates/importRates.ts');
      await withDatabase({ max: 1 }, async (db) => {
        try {
          const outcome = await importRates(db, parsed.rates);
          printResult(
            opts.json,
            outcome,
            (o) =>
              `${o.added} rate${o.added === 1 ? '' : 's'} imported, ${o.unchanged} already there unchanged`,
          );
        } catch (err) {
          if (err instanceof RateConflictError) throw new CliError(`${file}: ${err.message}`);
          throw err;
        }
      });
    });
}
