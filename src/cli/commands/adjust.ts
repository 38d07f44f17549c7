import type { Command } from 'commander';
import { systemClock } from '../../clock.ts';
import type { Correction } from '../../corrections/correction.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { renderTable } from '../../text/table.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';
import { defaultUser } from './defaultUser.ts';

/**
 * `stablebooks adjust move|undo|list`: a person's corrections of what the rules leave "for a
 * person" (docs/accounting.md, "Corrections"): a finding's leftover in in_transit or suspense
 * moved to the account it belongs in, as one more entry, and undone by its reversal.
 */
export function registerAdjust(program: Command): void {
  const adjust = program
    .command('adjust')
    .description('corrections a person makes: move a finding’s leftover, undo a correction, list them');

  adjust
    .command('move')
    .description('move what a finding leaves in in_transit or suspense to the account a person names')
    .argument(
      '<finding>',
      'finding id: payment_amount_mismatch, proven_then_failed or confirmed_amounts_changed',
    )
    .requiredOption(
      '--to <account>',
      'account kind, e.g. expense:sales_shortfall or liability:customer_overpayments',
    )
    .requiredOption('--note <text>', 'why, for the next person')
    .option('--by <name>', 'who decides (default: the user running the command)')
    .option('--amount <decimal>', 'token units to move (default: the whole leftover)')
    .option('--json', 'machine-readable output')
    .action(
      async (
        finding: string,
        opts: { to: string; note: string; by?: string; amount?: string; json?: boolean },
      ) => {
        // Each action imports what it runs (docs/decisions.md, "CLI start-up").
        const { moveLeftover } = await import('../../corrections/moveLeftover.ts');
        await withDatabase({ max: 1 }, async (db) => {
          const { correction: c, leftAfter } = await db.transaction((tx) =>
            moveLeftover(tx, {
              finding,
              to: opts.to,
              ...(opts.amount === undefined ? {} : { amount: opts.amount }),
              note: opts.note,
              by: opts.by ?? defaultUser(),
              at: systemClock.now(),
            }),
          );
          printResult(
            opts.json,
            { outcome: 'moved', correction: correctionJson(c), left: leftAfter.toString() },
            () =>
              `correction ${c.id}: ${amountOf(c)} moved from ${c.fromAccount} to ${c.toAccount} (finding ${c.findingId}, intent ${c.refId}): entry ${c.entryId}; ${formatDecimalAmount(leftAfter, c.decimals)} ${c.symbol} left; finding ${c.findingId} acknowledged`,
          );
        });
      },
    );

  adjust
    .command('undo')
    .description('reverse a correction: the leftover is back where the rule left it')
    .argument('<correction>', 'correction id (see adjust list)')
    .requiredOption('--note <text>', 'why, for the next person')
    .option('--by <name>', 'who decides (default: the user running the command)')
    .option('--json', 'machine-readable output')
    .action(async (correction: string, opts: { note: string; by?: string; json?: boolean }) => {
      const { undoCorrection } = await import('../../corrections/undoCorrection.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const outcome = await db.transaction((tx) =>
          undoCorrection(tx, {
            correction,
            note: opts.note,
            by: opts.by ?? defaultUser(),
            at: systemClock.now(),
          }),
        );
        const c = outcome.correction;
        printResult(
          opts.json,
          {
            outcome: outcome.kind,
            ...(outcome.kind === 'undone' ? { reversal_entry_id: outcome.reversalEntryId.toString() } : {}),
            correction: correctionJson(c),
          },
          () =>
            outcome.kind === 'unchanged'
              ? `correction ${c.id} was already undone by ${c.undoneBy} at ${c.undoneAt?.toISOString()}; nothing written`
              : `correction ${c.id} undone: reversal entry ${outcome.reversalEntryId}, ${amountOf(c)} back in ${c.fromAccount}`,
        );
      });
    });

  adjust
    .command('list')
    .description('every correction, oldest first, with who, why and whether it was undone')
    .option('--store <id>', 'only this store')
    .option('--json', 'machine-readable output (amounts in base units as strings)')
    .action(async (opts: { store?: string; json?: boolean }) => {
      const { listCorrections } = await import('../../corrections/correction.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const list = await listCorrections(db, { storeId: opts.store });
        printResult(opts.json, list.map(correctionJson), () =>
          list.length === 0
            ? 'no corrections'
            : renderTable(
                ['id', 'finding', 'intent', 'store', 'amount', 'from', 'to', 'by', 'at', 'note', 'undone'],
                list.map((c) => [
                  c.id.toString(),
                  `${c.findingId} (${c.findingKind})`,
                  c.refId,
                  c.storeId,
                  amountOf(c),
                  c.fromAccount,
                  c.toAccount,
                  c.madeBy,
                  c.madeAt.toISOString(),
                  c.note,
                  c.undoneAt === null ? '-' : `${c.undoneAt.toISOString()} by ${c.undoneBy}: ${c.undoNote}`,
                ]),
                [4],
              ),
        );
      });
    });
}

function amountOf(c: Correction): string {
  return `${formatDecimalAmount(c.amount, c.decimals)} ${c.symbol}`;
}

function correctionJson(c: Correction) {
  return {
    id: c.id.toString(),
    finding_id: c.findingId.toString(),
    finding_kind: c.findingKind,
    intent_id: c.refId,
    entry_id: c.entryId.toString(),
    store_id: c.storeId,
    chain_id: c.chainId,
    symbol: c.symbol,
    amount: c.amount.toString(),
    amount_decimal: formatDecimalAmount(c.amount, c.decimals),
    from_account: c.fromAccount,
    to_account: c.toAccount,
    note: c.note,
    made_by: c.madeBy,
    made_at: c.madeAt.toISOString(),
    undone_at: c.undoneAt?.toISOString() ?? null,
    undone_by: c.undoneBy,
    undo_note: c.undoNote,
  };
}
