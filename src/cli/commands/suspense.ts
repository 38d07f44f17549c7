import type { Command } from 'commander';
import { systemClock } from '../../clock.ts';
import { isSuspenseClassification, SUSPENSE_CLASSIFICATIONS } from '../../ledger/rules/suspenseRules.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import type { SuspenseItem } from '../../suspense/suspenseItems.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';
import { defaultUser } from './defaultUser.ts';

/**
 * `stablebooks suspense list|classify|unclassify`: money rule 9 booked to suspense, and a person's
 * word on what it was (docs/accounting.md, rule 10).
 */
export function registerSuspense(program: Command): void {
  const suspense = program
    .command('suspense')
    .description('money in suspense (rule 9): list it, classify it, undo a classification');

  suspense
    .command('list')
    .description('the unclassified items in suspense, oldest first')
    .option('--store <id>', 'only this store')
    .option('--all', 'the classified items too, with their classification')
    .option('--json', 'machine-readable output (amounts in base units as strings)')
    .action(async (opts: { store?: string; all?: boolean; json?: boolean }) => {
      // Each action imports what it runs (docs/decisions.md, "CLI start-up").
      const { listSuspenseItems } = await import('../../suspense/suspenseItems.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const items = await listSuspenseItems(db, { storeId: opts.store, all: opts.all });
        printResult(opts.json, items.map(itemJson), () =>
          items.length === 0
            ? opts.all
              ? 'nothing in suspense'
              : 'nothing unclassified in suspense'
            : renderTable(
                [
                  'entry',
                  'transfer (tx:log)',
                  'chain',
                  'amount',
                  'wallet',
                  'store',
                  'date',
                  'finding',
                  ...(opts.all ? ['classification', 'by', 'at', 'note'] : []),
                ],
                items.map((i) => [
                  i.entryId.toString(),
                  `${i.txHash}:${i.logIndex}`,
                  String(i.chainId),
                  `${formatDecimalAmount(i.amount, i.token.decimals)} ${i.token.symbol}`,
                  `${i.wallet} (${i.walletRole})`,
                  i.storeId,
                  i.occurredAt.toISOString(),
                  i.findingId ?? '-',
                  ...(opts.all
                    ? i.classification
                      ? [
                          i.classification.classification,
                          i.classification.classifiedBy,
                          i.classification.classifiedAt.toISOString(),
                          i.classification.note,
                        ]
                      : ['unclassified', '-', '-', '-']
                    : []),
                ]),
                [3],
              ),
        );
      });
    });

  suspense
    .command('classify')
    .description('move an item out of suspense to the account its classification names')
    .argument('<item>', 'entry id, <chain id>:<tx hash>:<log index>, <tx hash>:<log index> or tx hash')
    .requiredOption('--as <classification>', SUSPENSE_CLASSIFICATIONS.join(', '))
    .requiredOption('--note <text>', 'why, for the next person')
    .option('--by <name>', 'who decides (default: the user running the command)')
    .option('--json', 'machine-readable output')
    .action(async (item: string, opts: { as: string; note: string; by?: string; json?: boolean }) => {
      const classification = opts.as;
      if (!isSuspenseClassification(classification))
        throw new CliError(
          `--as: ${JSON.stringify(classification)} is not one of ${SUSPENSE_CLASSIFICATIONS.join(', ')}`,
        );
      const { classifySuspense, describe } = await import('../../suspense/classifySuspense.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const outcome = await db.transaction((tx) =>
          classifySuspense(tx, {
            item,
            classification,
            note: opts.note,
            by: opts.by ?? defaultUser(),
            at: systemClock.now(),
          }),
        );
        const c = outcome.item.classification;
        printResult(
          opts.json,
          {
            outcome: outcome.kind,
            ...(outcome.kind === 'classified' ? { entry_id: outcome.entryId.toString() } : {}),
            item: itemJson(outcome.item),
          },
          () =>
            outcome.kind === 'unchanged'
              ? `${describe(outcome.item)} was already classified as ${c?.classification} by ${c?.classifiedBy} at ${c?.classifiedAt.toISOString()}; nothing booked`
              : `${describe(outcome.item)} classified as ${classification}: entry ${outcome.entryId}` +
                (outcome.findingResolved ? `, finding ${outcome.item.findingId} resolved` : ''),
        );
      });
    });

  suspense
    .command('unclassify')
    .description('reverse an item’s classification: the money is back in suspense, its finding open again')
    .argument('<item>', 'entry id, <chain id>:<tx hash>:<log index>, <tx hash>:<log index> or tx hash')
    .requiredOption('--note <text>', 'why, for the next person')
    .option('--by <name>', 'who decides (default: the user running the command)')
    .option('--json', 'machine-readable output')
    .action(async (item: string, opts: { note: string; by?: string; json?: boolean }) => {
      const { describe, unclassifySuspense } = await import('../../suspense/classifySuspense.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const outcome = await db.transaction((tx) =>
          unclassifySuspense(tx, {
            item,
            note: opts.note,
            by: opts.by ?? defaultUser(),
            at: systemClock.now(),
          }),
        );
        printResult(
          opts.json,
          {
            outcome: 'unclassified',
            reversed: outcome.reversed,
            reversal_entry_id: outcome.reversalEntryId.toString(),
            item: itemJson(outcome.item),
          },
          () =>
            `${describe(outcome.item)} unclassified (was ${outcome.reversed}): reversal entry ${outcome.reversalEntryId}, back in suspense` +
            (outcome.item.findingId ? `, finding ${outcome.item.findingId} open` : ''),
        );
      });
    });
}

function itemJson(i: SuspenseItem) {
  return {
    entry_id: i.entryId.toString(),
    transfer_id: i.transferId,
    tx_hash: i.txHash,
    log_index: i.logIndex,
    chain_id: i.chainId,
    token: i.token.address,
    symbol: i.token.symbol,
    amount: i.amount.toString(),
    amount_decimal: formatDecimalAmount(i.amount, i.token.decimals),
    direction: i.direction,
    wallet: i.wallet,
    wallet_role: i.walletRole,
    store_id: i.storeId,
    occurred_at: i.occurredAt.toISOString(),
    finding_id: i.findingId,
    classification: i.classification && {
      classification: i.classification.classification,
      note: i.classification.note,
      classified_by: i.classification.classifiedBy,
      classified_at: i.classification.classifiedAt.toISOString(),
      entry_id: i.classification.entryId.toString(),
    },
  };
}
