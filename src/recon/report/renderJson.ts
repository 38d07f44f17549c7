/**
 * The report as JSON (docs/report-schema.md): the machine-readable format, so it must render the
 * same report to the same bytes. Top-level fields come in the documented order; keys of nested
 * objects are sorted, which also pins the order of `details` keys that come from outside.
 */
import type { ReconReport } from './reportModel.ts';

const TOP_LEVEL_ORDER: readonly (keyof ReconReport)[] = [
  'schema',
  'version',
  'generatedAt',
  'period',
  'storeId',
  'passed',
  'checks',
  'accounts',
  'payments',
  'payouts',
  'suspense',
  'corrections',
  'findings',
  'balanceProofs',
  'trialBalance',
  'ledgerChain',
  'valuation',
];

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort())
      sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
    return sorted;
  }
  return value;
}

export function renderJson(report: ReconReport): string {
  const ordered: Record<string, unknown> = {};
  for (const key of TOP_LEVEL_ORDER) ordered[key] = sortKeys(report[key]);
  // A field added to the model but not to the list above is still rendered, never dropped.
  for (const key of Object.keys(report).sort()) {
    if (!(key in ordered)) ordered[key] = sortKeys((report as unknown as Record<string, unknown>)[key]);
  }
  return `${JSON.stringify(ordered, null, 2)}\n`;
}
