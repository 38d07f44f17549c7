import type { Command } from 'commander';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';
import { defaultUser } from './defaultUser.ts';

/**
 * `stablebooks rates import FILE.csv`: the merchant's daily rates for the valuation; `rates
 * supersede`: a person's correction of an imported rate, with a reason (the old one kept).
 */
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

  rates
    .command('supersede')
    .description(
      'replace an imported rate for the valuation, with a reason; the imported one stays as history',
    )
    .requiredOption('--date <day>', 'YYYY-MM-DD (UTC)')
    .requiredOption('--asset <coin>', 'USDT or USDC')
    .requiredOption('--currency <code>', 'ISO 4217 code in capitals, e.g. EUR')
    .requiredOption('--rate <decimal>', 'units of the currency per one coin')
    .requiredOption('--note <text>', 'why, for the next person')
    .option('--by <name>', 'who decides (default: the user running the command)')
    .option('--json', 'machine-readable output')
    .action(
      async (opts: {
        date: string;
        asset: string;
        currency: string;
        rate: string;
        note: string;
        by?: string;
        json?: boolean;
      }) => {
        const { supersedeRate, RateSupersedeError } = await import('../../rates/supersedeRate.ts');
        await withDatabase({ max: 1 }, async (db) => {
          try {
            const outcome = await db.transaction((tx) =>
              supersedeRate(tx, { ...opts, by: opts.by ?? defaultUser() }),
            );
            const what = `${opts.asset} in ${opts.currency} on ${opts.date}`;
            printResult(
              opts.json,
              outcome.kind === 'superseded'
                ? {
                    outcome: outcome.kind,
                    id: outcome.id.toString(),
                    rate: outcome.rate,
                    previous: outcome.previous,
                  }
                : { outcome: outcome.kind, rate: outcome.rate },
              () =>
                outcome.kind === 'unchanged'
                  ? `the rate of ${what} is ${outcome.rate} already; nothing written`
                  : `the rate of ${what} is ${outcome.rate} from now on (was ${outcome.previous}); supersession ${outcome.id}`,
            );
          } catch (err) {
            if (err instanceof RateSupersedeError) throw new CliError(err.message);
            throw err;
          }
        });
      },
    );
}
