import type { Command } from 'commander';
import type { FindingRow } from '../../findings/finding.ts';
import { renderTable } from '../../text/table.ts';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';
import { withDatabase } from '../withDatabase.ts';

const KIND_RE = /^[a-z][a-z0-9_]{0,63}$/;
const NOTE_MAX = 2000;
const SEVERITIES: readonly FindingRow['severity'][] = ['info', 'warning', 'critical'];

interface ListOptions {
  open?: boolean;
  kind?: string;
  severity?: string;
  store?: string;
  limit?: string;
  json?: boolean;
}

/** `stablebooks findings list|ack`: the disagreements the daemon and the reconciliation runs found. */
export function registerFindings(program: Command): void {
  const findings = program.command('findings').description('findings: list them, acknowledge one');

  findings
    .command('list')
    .description('findings, most recently seen first')
    .option('--open', 'only findings whose cause has not cleared')
    .option('--kind <kind>', 'only this kind, e.g. missing_webhook')
    .option('--severity <level>', 'only this severity: info, warning or critical')
    .option('--store <id>', 'only this store')
    .option('--limit <n>', 'at most this many (default 1000)')
    .option('--json', 'machine-readable output')
    .action(async (opts: ListOptions) => {
      if (opts.kind !== undefined && !KIND_RE.test(opts.kind))
        throw new CliError(
          `--kind: ${JSON.stringify(opts.kind)} is not a finding kind (lowercase, e.g. missing_webhook)`,
        );
      if (opts.severity !== undefined && !SEVERITIES.includes(opts.severity as FindingRow['severity']))
        throw new CliError(`--severity: ${JSON.stringify(opts.severity)} is not info, warning or critical`);
      const limit = opts.limit === undefined ? 1000 : Number(opts.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
        throw new CliError(`--limit: ${opts.limit} is not a whole number from 1 to 100000`);
      const { listFindings } = await import('../../findings/listFindings.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const rows = await listFindings(db, {
          openOnly: opts.open,
          kind: opts.kind,
          storeId: opts.store,
          limit,
        });
        printResult(opts.json, rows, () =>
          rows.length === 0
            ? 'no findings'
            : renderTable(
                ['id', 'kind', 'severity', 'store', 'ref', 'first seen', 'last seen', 'state'],
                rows.map((f) => [
                  f.id,
                  f.kind,
                  f.severity,
                  f.storeId ?? '-',
                  `${f.refType} ${f.refId}`,
                  f.firstSeenAt,
                  f.lastSeenAt,
                  state(f),
                ]),
              ),
        );
      });
    });

  findings
    .command('ack')
    .description('acknowledge a finding with a note (it stays open until its cause clears)')
    .argument('<id>', 'finding id, from findings list')
    .requiredOption('--note <text>', 'what you found or did, for the next person')
    .option('--json', 'machine-readable output')
    .action(async (idText: string, opts: { note: string; json?: boolean }) => {
      if (!/^\d{1,18}$/.test(idText))
        throw new CliError(`finding id ${JSON.stringify(idText)} is not a number`);
      const note = opts.note.trim();
      if (note.length === 0) throw new CliError('--note: must say something');
      if (note.length > NOTE_MAX) throw new CliError(`--note: at most ${NOTE_MAX} characters`);
      const { ackFinding } = await import('../../findings/ackFinding.ts');
      await withDatabase({ max: 1 }, async (db) => {
        const outcome = await ackFinding(db, BigInt(idText), note);
        if (outcome.kind === 'not_found') throw new CliError(`finding ${idText} does not exist`);
        const f = outcome.finding;
        printResult(
          opts.json,
          f,
          () => `finding ${f.id} (${f.kind} ${f.refType} ${f.refId}) acknowledged: ${state(f)}`,
        );
      });
    });
}

function state(f: FindingRow): string {
  if (f.resolvedAt) return `resolved ${f.resolvedAt}`;
  return f.ackedAt ? `open, acked: ${f.ackNote ?? ''}` : 'open';
}
