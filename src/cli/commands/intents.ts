import type { Command } from 'commander';
import { systemClock } from '../../clock.ts';
import type { ChainRegistry } from '../../config/chainRegistry.ts';
import type { DomainContext } from '../../context/domainContext.ts';
import type { Db } from '../../db/database.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import type { Currency } from '../../svc/models/currency.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

/**
 * Exit status when the service created the intent but it could not be recorded: a temporary
 * failure (EX_TEMPFAIL, as `payouts create` uses for an unknown outcome). The error line names the
 * intent and the command to run once the database answers: `intents track`, not the create again,
 * which would make a second intent.
 */
const EXIT_CREATED_NOT_RECORDED = 75;

export function registerIntents(program: Command): void {
  const intents = program.command('intents').description('checkout intents: create, track and inspect');

  intents
    .command('create')
    .description(
      'create a checkout intent at the service and track it (the daemon polls it until it settles)',
    )
    .requiredOption('--store <id>', 'store of STORES_FILE')
    .requiredOption(
      '--amount <decimal>',
      'amount, e.g. 25.00 (of --currency, or of --coin when priced in a stable coin)',
    )
    .option('--currency <code>', 'fiat currency code, e.g. USD, EUR')
    .option('--coin <symbol>', 'price natively in a stable coin: USDT or USDC')
    .option('--accept <symbols>', 'coins the payer may use, comma-separated, e.g. USDT,USDC')
    .option('--order-id <id>')
    .option('--description <text>')
    .option('--json', 'machine-readable output')
    .action(
      async (opts: {
        store: string;
        amount: string;
        currency?: string;
        coin?: string;
        accept?: string;
        orderId?: string;
        description?: string;
        json?: boolean;
      }) => {
        if (Boolean(opts.currency) === Boolean(opts.coin))
          throw new CliError('give exactly one of --currency or --coin');
        if (!/^\d+(\.\d{1,2})?$/.test(opts.amount))
          throw new CliError(`--amount: ${opts.amount} is not an amount with at most 2 decimals`);
        const [whole, frac = ''] = opts.amount.split('.');
        const amountCents = BigInt(whole ?? '0') * 100n + BigInt(frac.padEnd(2, '0'));
        // Each action imports what it runs (docs/decisions.md, "CLI start-up").
        const [
          { currencyFromCode },
          { stableCoinFromSymbol },
          { checkoutStatusName },
          { createIntent, IntentNotRecordedError },
        ] = await Promise.all([
          import('../../svc/models/currency.ts'),
          import('../../svc/models/stableCoin.ts'),
          import('../../svc/models/checkoutStatus.ts'),
          import('../../payments/createIntent.ts'),
        ]);
        const coinOrFail = (symbol: string) => stableCoinOrFail(symbol, stableCoinFromSymbol);
        const request = {
          ...(opts.currency
            ? { currency: currencyOrFail(opts.currency, currencyFromCode) }
            : { stable_coin: coinOrFail(opts.coin ?? '') }),
          amount_cents: amountCents,
          order_id: opts.orderId ?? null,
          order_description: opts.description ?? null,
          ...(opts.accept
            ? { accepted_stable_coins: opts.accept.split(',').map((c) => coinOrFail(c.trim())) }
            : {}),
        };
        await withPayments(async (deps) => {
          let outcome: Awaited<ReturnType<typeof createIntent>>;
          try {
            outcome = await createIntent(deps, opts.store, request);
          } catch (err) {
            if (err instanceof IntentNotRecordedError)
              throw new CliError(err.message, EXIT_CREATED_NOT_RECORDED);
            throw err;
          }
          const { created, applied, firstReadError } = outcome;
          // Created is success even when the first read failed: the intent is tracked and the
          // daemon's polls read it; running the create again would make a second intent.
          printResult(
            opts.json,
            { ...created, status: applied?.status ?? null, first_read_error: firstReadError },
            (r) =>
              [
                `created intent ${r.allsvc_checkout_intent_id}: ${r.amount_coins}${r.status === null ? '' : ` (${checkoutStatusName(r.status as never)})`}`,
                `checkout URL: ${r.checkout_url}`,
                r.first_read_error
                  ? `its first read failed (${r.first_read_error}); the daemon polls it until it settles, do not create it again`
                  : 'the daemon polls it until it settles',
              ].join('\n'),
          );
        });
      },
    );

  intents
    .command('track <id>')
    .description('start tracking an intent created elsewhere (fetches it now; the daemon polls it)')
    .requiredOption('--store <id>', 'store of STORES_FILE that owns the intent')
    .option('--json', 'machine-readable output')
    .action(async (id: string, opts: { store: string; json?: boolean }) => {
      const [{ trackIntent }, { checkoutStatusName }] = await Promise.all([
        import('../../payments/createIntent.ts'),
        import('../../svc/models/checkoutStatus.ts'),
      ]);
      await withPayments(async (deps) => {
        const applied = await trackIntent(deps, opts.store, id);
        printResult(
          opts.json,
          { id, status: applied.status, terminal: applied.terminal },
          (r) =>
            `tracking ${r.id}: ${checkoutStatusName(r.status as never)}${r.terminal ? ' (settled)' : ''}`,
        );
      });
    });

  intents
    .command('show <id>')
    .description('the intent as last seen, its status history, ledger entries and open findings')
    .option('--json', 'machine-readable output')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { showIntent } = await import('../../payments/showIntent.ts');
      await withDb(async (db, chains) => {
        const shown = await showIntent({ db, chains }, id);
        if (!shown)
          throw new CliError(
            `intent ${id} is not tracked (track it with: stablebooks intents track ${id} --store S)`,
          );
        const { intent: row, history, entries, chain_proof: proof, findings } = shown;
        printResult(opts.json, shown, () =>
          [
            `intent ${id} (store ${row.store_id}): ${row.status_name ?? '-'}, ${row.amount_coins} ${row.coin_symbol} on chain ${row.chain_id}`,
            `  paid ${row.actual_paid_amount ?? '-'}, fee ${row.service_fee_amount ?? '-'}, net ${row.net_income_amount ?? '-'}; tracked via ${row.tracked_via}, ${row.poll_count} polls${row.settled_by ? `, settled by ${row.settled_by}` : ''}`,
            `  payment tx ${proof.tx_hash ?? '-'}: ${proof.proven ? 'proven on chain' : 'not proven on chain'}`,
            'history:',
            ...history.map(
              (h) =>
                `  ${h.observed_at}  ${h.from_status_name ?? '(new)'} -> ${h.to_status_name}  (${h.source})`,
            ),
            'ledger entries:',
            ...(entries.length === 0
              ? ['  none']
              : entries.flatMap((e) => [
                  `  #${e.id} ${e.kind} at ${e.occurred_at}`,
                  ...e.postings.map(
                    (p) =>
                      `    ${p.account.padEnd(52)} ${formatDecimalAmount(BigInt(p.amount), p.decimals)} ${p.symbol}`,
                  ),
                ])),
            'open findings:',
            ...(findings.length === 0 ? ['  none'] : findings.map((f) => `  ${f.kind} (${f.severity})`)),
          ].join('\n'),
        );
      });
    });
}

function currencyOrFail(code: string, currencyFromCode: (code: string) => Currency): Currency {
  try {
    return currencyFromCode(code.toUpperCase());
  } catch {
    throw new CliError(`--currency: ${code} is not a currency the service knows (USD, EUR, GBP, ...)`);
  }
}

function stableCoinOrFail(symbol: string, stableCoinFromSymbol: (symbol: string) => 1 | 2): 1 | 2 {
  try {
    return stableCoinFromSymbol(symbol.toUpperCase());
  } catch {
    throw new CliError(`coin ${symbol} is not USDT or USDC`);
  }
}

async function withDb<T>(fn: (db: Db, chains: ChainRegistry) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { createDatabase }] = await Promise.all([
    import('../../config/loadConfig.ts'),
    import('../../db/database.ts'),
  ]);
  const config = loadConfig(process.env);
  const database = createDatabase(config.databaseUrl, { max: 2 });
  try {
    return await fn(database.db, config.chains);
  } finally {
    await database.close();
  }
}

async function withPayments<T>(fn: (deps: DomainContext) => Promise<T>): Promise<T> {
  const [{ loadConfig, secretValues }, { createDatabase }, { createLogger }, { createDomainContext }] =
    await Promise.all([
      import('../../config/loadConfig.ts'),
      import('../../db/database.ts'),
      import('../../logging/logger.ts'),
      import('../../context/domainContext.ts'),
    ]);
  const config = loadConfig(process.env);
  const logger = createLogger({ level: 'warn', secrets: secretValues(config) });
  const database = createDatabase(config.databaseUrl, { max: 2 });
  try {
    return await fn(createDomainContext(config, { db: database.db, clock: systemClock, logger }));
  } finally {
    await database.close();
  }
}
