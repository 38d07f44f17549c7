import type { Command } from 'commander';
import type { Clock } from '../../clock.ts';
import type { DomainContext } from '../../context/domainContext.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import type { ShownPayout } from '../../payouts/showPayout.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

/** Exit status when a create's outcome is unknown: run the same command again (EX_TEMPFAIL). */
const EXIT_OUTCOME_UNKNOWN = 75;

/**
 * `stablebooks payouts create|cancel|show`: claim-link auto-payouts. The claim URL and token are
 * bearer secrets: printed only with --reveal. The payouts modules are imported inside the actions,
 * so other commands (the daemon above all) do not load them.
 */
export function registerPayouts(program: Command): void {
  const payouts = program.command('payouts').description('claim-link payouts: create, cancel and inspect');

  payouts
    .command('create')
    .description(
      'create and fund a claim link (idempotent by --reference-id: running it again resumes, never pays twice)',
    )
    .requiredOption('--store <id>', 'store of STORES_FILE')
    .requiredOption('--amount <decimal>', 'claimable amount in coin units, e.g. 5.25')
    .requiredOption('--coin <symbol>', 'USDT or USDC')
    .requiredOption('--chain <chain>', 'EIP-155 chain id or name, e.g. 8453 or base')
    .requiredOption(
      '--reference-id <id>',
      'your idempotency key: 1 to 128 printable ASCII characters, no spaces',
    )
    .option('--email <address>', 'receiver e-mail, recorded on the link (the service sends no e-mail)')
    .option('--sender-name <name>', 'sender name shown to the recipient')
    .option('--message <text>', 'note shown to the recipient')
    .option('--reveal', 'also print the claim URL and token (secrets)')
    .option('--json', 'machine-readable output')
    .action(
      async (opts: {
        store: string;
        amount: string;
        coin: string;
        chain: string;
        referenceId: string;
        email?: string;
        senderName?: string;
        message?: string;
        reveal?: boolean;
        json?: boolean;
      }) => {
        const { createPayout } = await import('../../payouts/createPayout.ts');
        const { PayoutCreateError } = await import('../../payouts/errors.ts');
        const { showPayout } = await import('../../payouts/showPayout.ts');
        await withPayouts({ createClient: true }, async (deps) => {
          let created: Awaited<ReturnType<typeof createPayout>>;
          try {
            created = await createPayout(deps, {
              storeId: opts.store,
              amount: opts.amount,
              coin: opts.coin,
              chain: opts.chain,
              referenceId: opts.referenceId,
              receiverEmail: opts.email ?? null,
              senderName: opts.senderName ?? null,
              senderMessage: opts.message ?? null,
            });
          } catch (err) {
            if (err instanceof PayoutCreateError) {
              throw new CliError(err.message, err.outcome === 'unknown' ? EXIT_OUTCOME_UNKNOWN : 1);
            }
            throw err;
          }
          const shown = await showPayout(deps, created.payout.id, { reveal: Boolean(opts.reveal) });
          const p = shown.payout;
          printResult(
            opts.json,
            { ...p, called: created.called, idempotent_hit: created.idempotentHit },
            () =>
              [
                created.called
                  ? `payout ${p.id}: claim link ${p.claim_link_id} funded with ${p.amount} ${p.coin} on chain ${p.chain_id} (${p.link_status})` +
                    (created.idempotentHit
                      ? '; the service matched an earlier call with this reference_id'
                      : '')
                  : `payout ${p.id} was already created (nothing sent): claim link ${p.claim_link_id}, ${p.amount} ${p.coin} on chain ${p.chain_id}`,
                `  reference_id ${p.reference_id}; funding tx ${p.funding_tx_hash ?? '-'}; expires ${p.expires_at ?? '-'}`,
                `  claim URL:   ${p.claim_url ?? '-'}`,
                `  claim token: ${p.claim_token ?? '-'}`,
                ...(opts.reveal ? [] : [`show them with: stablebooks payouts show ${p.id} --reveal`]),
              ].join('\n'),
          );
        });
      },
    );

  payouts
    .command('cancel <id>')
    .description('cancel a funded, unclaimed link (payout id or claim-link id); its refund follows')
    .option('--json', 'machine-readable output')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { cancelPayout } = await import('../../payouts/cancelPayout.ts');
      await withPayouts({ createClient: false }, async (deps) => {
        const result = await cancelPayout(deps, id);
        const p = result.payout;
        printResult(
          opts.json,
          {
            id: p.id,
            claim_link_id: p.claimLinkId,
            link_status: p.linkStatus,
            cancelled_at: p.cancelledAt?.toISOString() ?? null,
            already_cancelled: result.alreadyCancelled,
          },
          (r) =>
            r.cancelled_at === null
              ? // Our books closed it otherwise (expired, claimed): a conflict finding, not a second close.
                `payout ${r.id}: the service reports claim link ${r.claim_link_id} cancelled, but our books already hold it ${r.link_status ?? 'closed'}; see the claim_link_close_conflict finding: stablebooks payouts show ${r.id}`
              : `payout ${r.id}: claim link ${r.claim_link_id} ${r.already_cancelled ? 'was already cancelled' : 'cancelled'}; the refund to the custody wallet is pending`,
        );
      });
    });

  payouts
    .command('show <id>')
    .description('a payout (payout id or claim-link id), its ledger entries and open findings')
    .option('--reveal', 'print the claim URL and token (secrets)')
    .option('--json', 'machine-readable output')
    .action(async (id: string, opts: { reveal?: boolean; json?: boolean }) => {
      const { showPayout } = await import('../../payouts/showPayout.ts');
      await withPayouts({ createClient: false }, async (deps) => {
        const shown = await showPayout(deps, id, { reveal: Boolean(opts.reveal) });
        printResult(opts.json, shown, showText);
      });
    });
}

function showText(shown: ShownPayout): string {
  const p = shown.payout;
  return [
    `payout ${p.id} (store ${p.store_id}, reference_id ${p.reference_id}): ${p.create_outcome}, ${p.amount} ${p.coin} on chain ${p.chain_id}`,
    `  claim link ${p.claim_link_id ?? '-'}: ${p.link_status ?? '-'}; funded ${p.funded_at ?? '-'}, expires ${p.expires_at ?? '-'}`,
    `  funding tx ${p.funding_tx_hash ?? '-'}; cancelled ${p.cancelled_at ?? '-'}; expired ${p.expired_at ?? '-'}; refund tx ${p.refund_tx_hash ?? '-'}; refunded ${p.refunded_at ?? '-'}`,
    `  attempts ${p.attempts}${p.idempotent_hit ? ', idempotent hit' : ''}${p.last_error ? `; last error: ${p.last_error}` : ''}`,
    `  claim URL:   ${p.claim_url ?? '-'}`,
    `  claim token: ${p.claim_token ?? '-'}`,
    'ledger entries:',
    ...(shown.entries.length === 0
      ? ['  none']
      : shown.entries.flatMap((e) => [
          `  #${e.id} ${e.kind} at ${e.occurred_at}`,
          ...e.postings.map(
            (x) =>
              `    ${x.account.padEnd(52)} ${formatDecimalAmount(BigInt(x.amount), x.decimals)} ${x.symbol}`,
          ),
        ])),
    'open findings:',
    ...(shown.findings.length === 0 ? ['  none'] : shown.findings.map((f) => `  ${f.kind} (${f.severity})`)),
  ].join('\n');
}

/**
 * Builds the payouts dependencies from the environment. For create, the clients do not retry
 * themselves: createPayout retries with the same reference_id and records every attempt.
 */
async function withPayouts<T>(
  options: { createClient: boolean },
  fn: (deps: DomainContext) => Promise<T>,
): Promise<T> {
  const { loadConfig, secretValues } = await import('../../config/loadConfig.ts');
  const config = loadConfig(process.env);
  const [
    { createDatabase },
    { createLogger },
    { createFollowedClock },
    { systemClock },
    { createDomainContext },
  ] = await Promise.all([
    import('../../db/database.ts'),
    import('../../logging/logger.ts'),
    import('../../followedClock.ts'),
    import('../../clock.ts'),
    import('../../context/domainContext.ts'),
  ]);
  // The same clock as the daemon's: with CLOCK_URL (demo, tests) a funding or cancel is dated by
  // the sandbox's time, and requests are signed with it (its timestamp check reads that clock).
  // One reading is enough for a command that lasts seconds.
  let clock: Clock = systemClock;
  if (config.clockUrl) {
    const followed = createFollowedClock(config.clockUrl);
    await followed.start();
    followed.stop();
    clock = followed;
  }
  // Errors only, and on stderr: stdout is the command's result (--json), and a failure is one line.
  const logger = createLogger({ level: 'error', secrets: secretValues(config), destination: process.stderr });
  const database = createDatabase(config.databaseUrl, { max: 2 });
  try {
    return await fn(
      createDomainContext(config, {
        db: database.db,
        clock,
        logger,
        clientOptions: () => (options.createClient ? { retry: { maxAttempts: 1 } } : {}),
      }),
    );
  } finally {
    await database.close();
  }
}
