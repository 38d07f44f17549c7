/**
 * Findings: every disagreement any part of stablebooks notices between what it was told (the
 * service's API, its webhooks, the chain) and what it booked. At most one finding is open per
 * (kind, ref); it is refreshed while its cause persists and resolved when the cause clears. What
 * each kind means: docs/accounting.md, "Findings".
 */

import type { FindingKind } from './findingKinds.ts';

export type Severity = 'info' | 'warning' | 'critical';

/** A finding as the code that noticed it writes it (recordFinding), in the same transaction. */
export interface FindingDraft {
  kind: FindingKind;
  severity: Severity;
  ref: { type: string; id: string };
  details: Record<string, unknown>;
}

/** A findings row as it is listed and reported. */
export interface FindingRow {
  id: string;
  kind: string;
  severity: Severity;
  storeId: string | null;
  refType: string;
  refId: string;
  details: Record<string, unknown>;
  firstSeenAt: string;
  lastSeenAt: string;
  resolvedAt: string | null;
  ackedAt: string | null;
  ackNote: string | null;
}
