import type { Command } from 'commander';
import type { BalancePoint } from '../../ledger/balances.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';

const money = (amount: bigint, decimals: number, symbol: string) =>
  `${formatDecimalAmount(amount, decimals)} ${symbol}`;

export function registerLedger(program: Command): void {
  const ledger = program
    .command('ledger')
    .description('read the double-entry ledger, and seal and verify its hash chain');

  ledger
    .command('balances')
    .description('balance of every account, and the trial balance per asset')
    .option('--store <id>', 'only this store')
    .option('--at <time>', 'as of this time (ISO 8601, by when movements happened)')
    .option('--at-entry <id>', 'as of just after this entry id')
    .option(
      '--value <currency>',
      'beside each balance its value in this currency (docs/accounting.md, "Valuation")',
    )
    .option('--json', 'machine-readable output (amounts in base units as strings)')
    .action(
      async (opts: { store?: string; at?: string; atEntry?: string; value?: string; json?: boolean }) => {
        const at = parsePoint(opts.at, opts.atEntry);
        if (opts.value !== undefined) {
          if (at !== undefined && !(at instanceof Date))
            throw new CliError('--value values the books at a time: give --at, not --at-entry');
          const { printValuedBalances } = await import('./ledgerValue.ts');
          return printValuedBalances({ value: opts.value, store: opts.store, at, json: opts.json });
        }
        // Each action imports what it runs: the database driver and the ledger's queries load only
        // when a command needs them (docs/decisions.md, "CLI start-up").
        const { balances, trialBalance } = await import('../../ledger/balances.ts');
        await withDatabase({ max: 2 }, async (db) => {
          const rows = await balances(db, { storeId: opts.store, at });
          const trial = await trialBalance(db, { at });
          printResult(
            opts.json,
            {
              at: at instanceof Date ? at.toISOString() : at ? { entry_id: at.entryId.toString() } : null,
              accounts: rows.map((b) => ({
                code: b.code,
                type: b.type,
                store_id: b.storeId,
                asset: b.asset,
                symbol: b.symbol,
                decimals: b.decimals,
                balance: b.balance.toString(),
                balance_decimal: formatDecimalAmount(b.balance, b.decimals),
              })),
              trial_balance: trial.map((t) => ({
                asset: t.asset,
                symbol: t.symbol,
                debits: t.debits.toString(),
                credits: t.credits.toString(),
                net: t.net.toString(),
              })),
            },
            () =>
              [
                renderTable(
                  ['account', 'type', 'balance'],
                  rows.map((b) => [b.code, b.type, money(b.balance, b.decimals, b.symbol)]),
                  [2],
                ),
                '',
                'trial balance (each asset must net to zero)',
                renderTable(
                  ['asset', 'debits', 'credits', 'net'],
                  trial.map((t) => [
                    `${t.symbol} ${t.asset}`,
                    money(t.debits, t.decimals, t.symbol),
                    money(t.credits, t.decimals, t.symbol),
                    money(t.net, t.decimals, t.symbol),
                  ]),
                  [1, 2, 3],
                ),
              ].join('\n'),
          );
        });
      },
    );

  registerProve(ledger);
  registerChain(ledger);

  ledger
    .command('entries')
    .description('ledger entries, newest first, with their postings')
    .option('--ref <id>', 'only entries about this intent, claim link or transfer id')
    .option('--kind <kind>', 'only entries of this kind, e.g. checkout.confirmed')
    .option('--store <id>', 'only this store')
    .option('--limit <n>', 'at most this many entries', '50')
    .option(
      '--explain',
      'with each entry, the transfers it rests on: what part of which transfer settles what',
    )
    .option('--json', 'machine-readable output (amounts in base units as strings)')
    .action(
      async (opts: {
        ref?: string;
        kind?: string;
        store?: string;
        limit: string;
        explain?: boolean;
        json?: boolean;
      }) => {
        const limit = Number(opts.limit);
        if (!Number.isInteger(limit) || limit < 1)
          throw new CliError(`--limit: ${opts.limit} is not a positive integer`);
        const { listEntries } = await import('../../ledger/listEntries.ts');
        const { entryAllocations } = await import('../../chain/allocations.ts');
        await withDatabase({ max: 2 }, async (db) => {
          const entries = await listEntries(db, {
            refId: opts.ref,
            kind: opts.kind,
            storeId: opts.store,
            limit,
          });
          const explained = opts.explain
            ? await entryAllocations(
                db,
                entries.map((e) => e.id),
              )
            : [];
          const basis = (id: bigint) => explained.filter((a) => a.entry_id === id.toString());
          printResult(
            opts.json,
            entries.map((e) => ({
              id: e.id.toString(),
              idempotency_key: e.idempotencyKey,
              kind: e.kind,
              occurred_at: e.occurredAt.toISOString(),
              recorded_at: e.recordedAt.toISOString(),
              store_id: e.storeId,
              ref_type: e.ref.type,
              ref_id: e.ref.id,
              reverses_entry_id: e.reversesEntryId?.toString() ?? null,
              memo: e.memo,
              metadata: e.metadata,
              postings: e.postings.map((p) => ({
                account: p.accountCode,
                asset: p.asset,
                amount: p.amount.toString(),
              })),
              ...(opts.explain ? { allocations: basis(e.id).map(({ entry_id: _entry, ...a }) => a) } : {}),
            })),
            () =>
              entries.length === 0
                ? 'no entries'
                : entries
                    .map((e) =>
                      [
                        `#${e.id}  ${e.occurredAt.toISOString()}  ${e.kind}  ${e.ref.type} ${e.ref.id}` +
                          (e.reversesEntryId ? `  (reverses #${e.reversesEntryId})` : ''),
                        ...e.postings.map(
                          (p) =>
                            `    ${p.accountCode.padEnd(48)} ${(p.amount > 0n ? 'Dr ' : 'Cr ') + money(p.amount < 0n ? -p.amount : p.amount, p.decimals, p.symbol)}`,
                        ),
                        ...basis(e.id).map(
                          (a) =>
                            `    rests on ${a.transfer} (${a.side}): ${a.amount} base units to ${a.obligation_type} ${a.obligation_id}, ${a.purpose}, ${a.rule}` +
                            (a.released ? ` [released: ${a.released}]` : ''),
                        ),
                      ].join('\n'),
                    )
                    .join('\n'),
          );
        });
      },
    );
}

function registerProve(ledger: Command): void {
  ledger
    .command('prove')
    .description(
      'balance proofs now: each watched wallet and token, the ledger against balanceOf at the indexed finalized block',
    )
    .option('--chain <id>', 'only this EIP-155 chain')
    .option('--json', 'machine-readable output (amounts in base units as strings)')
    .action(async (opts: { chain?: string; json?: boolean }) => {
      const chainId = opts.chain === undefined ? undefined : Number(opts.chain);
      if (chainId !== undefined && (!Number.isInteger(chainId) || chainId <= 0))
        throw new CliError(`--chain: ${opts.chain} is not an EIP-155 chain id`);
      // Loaded on demand: viem and the metrics registry are not needed by the other ledger commands.
      const [
        { loadConfig },
        { createChainRpcs },
        { createMetrics },
        { proveBalances },
        { createFollowedClock },
        { systemClock },
        { createDatabase },
      ] = await Promise.all([
        import('../../config/loadConfig.ts'),
        import('../../chain/rpcClients.ts'),
        import('../../metrics/metrics.ts'),
        import('../../recon/balanceProofs.ts'),
        import('../../followedClock.ts'),
        import('../../clock.ts'),
        import('../../db/database.ts'),
      ]);
      const config = loadConfig(process.env);
      // The daemon's clock (the sandbox's with CLOCK_URL): a payout's funding is in flight for a
      // window after rule 5, dated on that clock.
      let clock = systemClock;
      if (config.clockUrl) {
        const followed = createFollowedClock(config.clockUrl);
        await followed.start();
        followed.stop();
        clock = followed;
      }
      if (chainId !== undefined && !config.rpcUrls.has(chainId))
        throw new CliError(`--chain: no RPC_URL_${chainId} is configured`);
      const database = createDatabase(config.databaseUrl, { max: 2 });
      try {
        const rpcs = createChainRpcs(config, createMetrics());
        const proofs = await proveBalances({ db: database.db, config, rpcs, clock }, { chainId });
        const result = (p: (typeof proofs)[number]) =>
          p.ok === true ? 'ok' : p.ok === false ? 'MISMATCH' : `FAILED: ${p.error}`;
        printResult(
          opts.json,
          proofs.map((p) => ({
            chain_id: p.chainId,
            token: p.symbol,
            wallet: p.wallet,
            role: p.role,
            store_ids: p.storeIds,
            block_number: p.blockNumber?.toString() ?? null,
            ledger_balance: p.ledgerBalance.toString(),
            chain_balance: p.chainBalance?.toString() ?? null,
            ok: p.ok,
            error: p.error,
          })),
          () =>
            proofs.length === 0
              ? 'no watched wallets: STORES_FILE lists no wallets on a chain with an RPC URL'
              : renderTable(
                  ['chain', 'token', 'role', 'wallet', 'block', 'ledger', 'balanceOf', 'result'],
                  proofs.map((p) => [
                    String(p.chainId),
                    p.symbol,
                    p.role,
                    p.wallet,
                    p.blockNumber?.toString() ?? '-',
                    money(p.ledgerBalance, p.decimals, p.symbol),
                    p.chainBalance === null ? '-' : money(p.chainBalance, p.decimals, p.symbol),
                    result(p),
                  ]),
                  [5, 6],
                ),
        );
      } finally {
        await database.close();
      }
    });
}

/** The books do not match what was sealed: as `stablebooks report` when the books are not proven. */
const EXIT_NOT_PROVEN = 3;
/** How often a long verification says how far it is. */
const PROGRESS_MS = 2_000;

function registerChain(ledger: Command): void {
  ledger
    .command('verify')
    .description(
      "recompute the entries' hash chain from the entries and name the first one that no longer matches",
    )
    .option(
      '--head <seq:hash>',
      "also check the chain against a head a report published (its ledger chain's seq:hash)",
    )
    .option('--json', 'machine-readable output')
    .action(async (opts: { head?: string; json?: boolean }) => {
      const expectHead = opts.head === undefined ? undefined : parseHead(opts.head);
      const [{ verifyLedgerChain }, { sealBacklog }, { formatChainHead }] = await Promise.all([
        import('../../ledger/verifyLedgerChain.ts'),
        import('../../ledger/sealLedger.ts'),
        import('../../ledger/chainHead.ts'),
      ]);
      await withDatabase({ max: 2 }, async (db) => {
        const started = Date.now();
        let said = started;
        // One snapshot for the whole walk; read only, so it holds no transaction id back.
        const { v, backlog } = await db.transaction(
          async (tx) => ({
            v: await verifyLedgerChain(tx, {
              expectHead,
              onProgress: (done, total) => {
                if (Date.now() - said < PROGRESS_MS) return;
                said = Date.now();
                process.stderr.write(
                  `ledger verify: ${done} of ${total} seals (${Math.floor((done / Math.max(1, total)) * 100)}%) ${((said - started) / 1000).toFixed(1)} s\n`,
                );
              },
            }),
            backlog: await sealBacklog(tx),
          }),
          { isolationLevel: 'repeatable read', accessMode: 'read only' },
        );
        const b = v.broken;
        printResult(
          opts.json,
          {
            ok: v.ok,
            verified: v.verified,
            head: v.head ? formatChainHead(v.head) : null,
            unsealed: backlog.unsealed,
            broken: b
              ? {
                  seq: b.seq.toString(),
                  entry_id: b.entryId?.toString() ?? null,
                  kind: b.kind,
                  store_id: b.storeId,
                  ref_type: b.ref?.type ?? null,
                  ref_id: b.ref?.id ?? null,
                  reason: b.reason,
                }
              : null,
          },
          () =>
            b
              ? `BROKEN at seal ${b.seq}` +
                (b.entryId === null
                  ? ''
                  : `: entry ${b.entryId} (${b.kind ?? '?'}, ${b.ref ? `${b.ref.type} ${b.ref.id}` : 'no ref'}, store ${b.storeId ?? '?'})`) +
                ` - ${b.reason}; ${v.verified} seals before it match`
              : `ok: ${v.verified} entries in the chain, every hash matches` +
                (v.head ? `; head ${formatChainHead(v.head)}` : '') +
                (expectHead ? `; the published head ${formatChainHead(expectHead)} matches` : '') +
                (backlog.unsealed > 0 ? `; ${backlog.unsealed} newer entries not sealed yet` : ''),
        );
        if (!v.ok) process.exitCode = EXIT_NOT_PROVEN;
      });
    });

  ledger
    .command('seal')
    .description(
      "extend the entries' hash chain now (the daemon's ledger.seal job does it every few seconds)",
    )
    .action(async () => {
      const [{ sealLedger }, { formatChainHead }] = await Promise.all([
        import('../../ledger/sealLedger.ts'),
        import('../../ledger/chainHead.ts'),
      ]);
      await withDatabase({ max: 2 }, async (db) => {
        const run = await sealLedger(db);
        process.stdout.write(
          run.ran
            ? `sealed ${run.sealed} entries; head ${run.head ? formatChainHead(run.head) : 'none (no entry yet)'}` +
                (run.unsealed > 0
                  ? `; ${run.unsealed} entries of transactions still open wait for the next run`
                  : '') +
                '\n'
            : 'another sealer is running; nothing done\n',
        );
      });
    });
}

function parseHead(value: string): { seq: bigint; hash: string } {
  const m = /^(\d+):([0-9a-f]{64})$/.exec(value.trim().toLowerCase());
  if (!m?.[1] || !m[2] || BigInt(m[1]) === 0n)
    throw new CliError(
      `--head: ${value} is not a chain head (seq:hash, e.g. 1042:<64 hex digits>, as a report prints it)`,
    );
  return { seq: BigInt(m[1]), hash: m[2] };
}

function parsePoint(at: string | undefined, atEntry: string | undefined): BalancePoint {
  if (at && atEntry) throw new CliError('give --at or --at-entry, not both');
  if (at) {
    const time = new Date(at);
    if (Number.isNaN(time.getTime())) throw new CliError(`--at: ${at} is not an ISO 8601 time`);
    return time;
  }
  if (atEntry) {
    if (!/^\d+$/.test(atEntry)) throw new CliError(`--at-entry: ${atEntry} is not an entry id`);
    return { entryId: BigInt(atEntry) };
  }
  return undefined;
}
