/**
 * Alert conditions: pure functions from rows to the conditions that hold now.
 *
 * Glossary:
 * - condition: something an on-call person should know about while it lasts, named by a stable
 *   key (the same cause gives the same key on every run);
 * - alert: the life of one condition in `alert_states` (firing, reminders, resolved);
 * - message: what a notifier receives for one alert event (src/alerts/notifiers.ts).
 *
 * No secret goes into a condition: finding details are reduced to short scalar values under keys
 * that do not look secret, and the notifiers scrub known secret values once more before sending.
 */
export type AlertSeverity = 'info' | 'warning' | 'critical';

export interface AlertCondition {
  key: string;
  severity: AlertSeverity;
  title: string;
  text: string;
  labels: Record<string, string>;
}

export interface FindingRow {
  kind: string;
  severity: AlertSeverity;
  storeId: string | null;
  refType: string;
  refId: string;
  details: unknown;
  firstSeenAt: Date;
  resolvedAt: Date | null;
  ackedAt: Date | null;
}

/** The latest balance proof of one (chain, token, wallet, role) still in the configuration. */
export interface ProofRow {
  chainId: number;
  token: string;
  symbol: string;
  wallet: string;
  role: string;
  ok: boolean | null;
  error: string | null;
  ledgerBalance: string;
  chainBalance: string | null;
  provedAt: Date;
  /** Why the ledger side was adjusted (payouts in flight added back), when it was. */
  note?: string | null;
}

export interface CursorRow {
  chainId: number;
  blockNumber: bigint;
  headBlock: bigint | null;
}

/** A cursor with the time a pass last wrote it (database time, as `chain_cursors.updated_at`). */
export interface CursorPassRow extends CursorRow {
  updatedAt: Date;
}

/** Keys of finding details never copied into a message, whatever their value. */
const SECRET_KEY =
  /secret|signature|token|claim|url|encryption|password|authorization|cookie|key|nonce|private|mnemonic/i;
const MAX_DETAILS = 8;
const MAX_DETAIL_LENGTH = 80;

/**
 * Findings another condition already alerts on, with more to say: `balance_proof_failed` on a
 * wallet is the reconciliation run's copy of the wallet's latest proof, which (b) follows as it is
 * made (every proof pass, not once a day), with its severity, both balances and each role, and
 * stops following once the wallet is retired. One drift, one alert: (b)'s.
 */
function alertedElsewhere(f: FindingRow): boolean {
  return f.kind === 'balance_proof_failed' && f.refType === 'wallet';
}

/** (a) Every open, unacknowledged finding of severity warning or critical (but those of alertedElsewhere). */
export function findingConditions(rows: FindingRow[]): AlertCondition[] {
  return rows
    .filter((f) => f.resolvedAt === null && f.ackedAt === null && f.severity !== 'info')
    .filter((f) => !alertedElsewhere(f))
    .map((f) => {
      const details = safeDetails(f.details);
      const store = f.storeId ? ` (store ${f.storeId})` : '';
      return {
        key: `finding:${f.kind}:${f.refType}:${f.refId}`,
        severity: f.severity,
        title: `Finding ${f.kind} on ${f.refType} ${f.refId}${store}`,
        text: [
          `Finding ${f.kind} (${f.severity}) on ${f.refType} ${f.refId}${store}, open since ${f.firstSeenAt.toISOString()}.`,
          ...(details ? [`Details: ${details}.`] : []),
        ].join(' '),
        labels: {
          source: 'finding',
          kind: f.kind,
          ref_type: f.refType,
          ref_id: f.refId,
          ...(f.storeId ? { store_id: f.storeId } : {}),
        },
      };
    });
}

/**
 * (b) Every (chain, token, wallet) whose latest balance proof is not ok: critical when the ledger
 * and balanceOf differ, warning when the proof could not be made. An address proven in two roles
 * (merchant and custody) is one condition, under the same key as one role: the worse of its
 * proofs sets the severity, and the text names each role not proven.
 */
export function balanceProofConditions(rows: ProofRow[]): AlertCondition[] {
  const byKey = new Map<string, ProofRow[]>();
  for (const p of rows.filter((r) => r.ok !== true)) {
    const key = `balance_proof:${p.chainId}:${p.token.toLowerCase()}:${p.wallet.toLowerCase()}`;
    byKey.set(key, [...(byKey.get(key) ?? []), p]);
  }
  return [...byKey].map(([key, proofs]) => {
    const sorted = [...proofs].sort((a, b) => Number(a.ok !== false) - Number(b.ok !== false));
    const p = sorted[0] as ProofRow;
    const roles = sorted.map((x) => x.role).join('+');
    const what = `${p.symbol} ${roles} wallet ${p.wallet} on chain ${p.chainId}`;
    const lines = sorted.map((x) => {
      const whose = sorted.length > 1 ? ` (${x.role})` : '';
      return x.ok === false
        ? `Balance proof failed for ${what}${whose}: ledger ${x.ledgerBalance}, balanceOf ${x.chainBalance ?? '?'} (base units), proved at ${x.provedAt.toISOString()}${x.note ? `; ${withoutUrls(x.note)}` : ''}.`
        : `Balance proof could not be made for ${what}${whose} at ${x.provedAt.toISOString()}: ${withoutUrls(x.error ?? 'no reason recorded')}.`;
    });
    return {
      key,
      severity: p.ok === false ? 'critical' : 'warning',
      title: p.ok === false ? `Balance proof failed: ${what}` : `Balance proof not made: ${what}`,
      text: [...new Set(lines)].join(' '),
      labels: {
        source: 'balance_proof',
        chain_id: String(p.chainId),
        token: p.symbol,
        role: roles,
        wallet: p.wallet,
      },
    } satisfies AlertCondition;
  });
}

/** (c) Every chain whose indexer cursor is more than `thresholdBlocks` behind the head. */
export function chainLagConditions(rows: CursorRow[], thresholdBlocks: number): AlertCondition[] {
  return rows
    .filter((c) => c.headBlock !== null && c.headBlock - c.blockNumber > BigInt(thresholdBlocks))
    .map((c) => {
      const lag = (c.headBlock ?? c.blockNumber) - c.blockNumber;
      return {
        key: `chain_lag:${c.chainId}`,
        severity: 'warning',
        title: `Chain ${c.chainId} indexer is ${lag} blocks behind`,
        text: `The indexer of chain ${c.chainId} is at block ${c.blockNumber}, ${lag} blocks behind the head ${c.headBlock} (threshold ${thresholdBlocks}).`,
        labels: { source: 'chain_lag', chain_id: String(c.chainId) },
      } satisfies AlertCondition;
    });
}

/**
 * (d) Every chain whose indexer has not completed a pass for longer than `thresholdMs` at `now`
 * (database time, like `updatedAt`): critical, as no payment on it is proven any more. Every pass
 * that reads the head writes the cursor, new blocks or not, so a quiet chain (anvil mines on
 * demand) is not stalled; a stuck indexer, by contrast, also stops recording the head, which is
 * why (c) cannot see it. Only chains in `followed` (the configuration still proves wallets there):
 * the cursor of a chain taken out of the configuration stays behind, never updated again.
 */
export function chainStalledConditions(
  rows: CursorPassRow[],
  followed: ReadonlySet<number>,
  now: Date,
  thresholdMs: number,
): AlertCondition[] {
  return rows
    .filter((c) => followed.has(c.chainId) && now.getTime() - c.updatedAt.getTime() > thresholdMs)
    .map((c) => {
      const minutes = Math.floor((now.getTime() - c.updatedAt.getTime()) / 60_000);
      const head = c.headBlock === null ? '' : `, head ${c.headBlock} as then seen`;
      return {
        key: `chain_stalled:${c.chainId}`,
        severity: 'critical',
        title: `Chain ${c.chainId} indexer stalled: no pass for ${minutes} minutes`,
        text:
          `The indexer of chain ${c.chainId} last recorded a pass at ${c.updatedAt.toISOString()}, ${minutes} minutes ago ` +
          `(threshold ${Math.round(thresholdMs / 60_000)}), at block ${c.blockNumber}${head}: payments on this chain are not being proven. ` +
          'Check the daemon log for why passes stop (RPC errors, nodes disagreeing or behind), the chain queue at /admin/queues and the worker processes.',
        labels: { source: 'chain_stalled', chain_id: String(c.chainId) },
      } satisfies AlertCondition;
    });
}

/** `key=value` pairs of the scalar details under keys that do not look secret, bounded. */
export function safeDetails(details: unknown): string {
  if (details === null || typeof details !== 'object' || Array.isArray(details)) return '';
  return Object.entries(details as Record<string, unknown>)
    .filter(([k, v]) => !SECRET_KEY.test(k) && ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => [k, withoutUrls(String(v))] as const)
    .filter(([, v]) => v.length <= MAX_DETAIL_LENGTH)
    .slice(0, MAX_DETAILS)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

/** RPC and claim URLs can carry credentials or bearer tokens: never copied into a message. */
function withoutUrls(text: string): string {
  return text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]');
}
