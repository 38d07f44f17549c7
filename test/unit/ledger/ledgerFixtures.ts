/**
 * Shared fixtures of the ledger rule tests (tokens: test/helpers/tokens.ts): wallets, chain
 * transfers, a trial balance by account, and a reversal the way the poster will write it.
 */
import { type AccountKind, accountCode, assetOf, type Token } from '../../../src/ledger/accounts.ts';
import type { EntryDraft, EntryLine } from '../../../src/ledger/entryDraft.ts';
import type { ChainTransferFact } from '../../../src/ledger/rules/chainTransferFact.ts';

export const STORE = 'st_a';
export const MERCHANT_WALLET = '0x1111111111111111111111111111111111111111' as const;
export const CUSTODY_WALLET = '0x2222222222222222222222222222222222222222' as const;
export const POOL_WALLET = '0x3333333333333333333333333333333333333333' as const;
export const STRANGER = '0x4444444444444444444444444444444444444444' as const;
export const T0 = new Date('2025-03-01T12:00:00.000Z');

/** A 32-byte hex value from a small number, for tx and block hashes. */
export function hash(n: number | bigint, salt = 0): `0x${string}` {
  return `0x${BigInt(n).toString(16).padStart(60, '0')}${salt.toString(16).padStart(4, '0')}`;
}

export function transfer(token: Token, overrides: Partial<ChainTransferFact> = {}): ChainTransferFact {
  return {
    chainId: token.chainId,
    txHash: hash(1),
    logIndex: 0,
    blockNumber: 100n,
    blockHash: hash(100, 1),
    tokenAddress: token.address,
    from: STRANGER,
    to: MERCHANT_WALLET,
    amount: 1n,
    occurredAt: T0,
    ...overrides,
  };
}

/** Lines of one entry as `{ 'assets:wallet': 5n, ... }` (kind -> amount), for readable assertions. */
export function linesByKind(entry: EntryDraft | null): Record<string, bigint> {
  if (entry === null) throw new Error('expected an entry, got null');
  const out: Record<string, bigint> = {};
  for (const line of entry.lines) {
    if (line.account.kind in out) throw new Error(`two lines on ${line.account.kind}`);
    out[line.account.kind] = line.amount;
  }
  return out;
}

/** Balance per account code over many entries. */
export function trialBalance(entries: Iterable<EntryDraft>): Map<string, bigint> {
  const totals = new Map<string, bigint>();
  for (const entry of entries) {
    for (const line of entry.lines) {
      const code = accountCode(line.account);
      totals.set(code, (totals.get(code) ?? 0n) + line.amount);
    }
  }
  return totals;
}

export function balanceOf(
  totals: Map<string, bigint>,
  kind: AccountKind,
  token: Token,
  store = STORE,
): bigint {
  return totals.get(accountCode({ kind, storeId: store, token })) ?? 0n;
}

/** Sum of every line of a token across all accounts: zero for a balanced ledger. */
export function assetTotal(entries: Iterable<EntryDraft>, token: Token): bigint {
  let sum = 0n;
  for (const entry of entries) {
    for (const line of entry.lines) if (assetOf(line.account.token) === assetOf(token)) sum += line.amount;
  }
  return sum;
}

/** The mirrored entry the poster's reverseEntry writes: same accounts, negated amounts. */
export function reversalOf(entry: EntryDraft): EntryDraft {
  return {
    ...entry,
    idempotencyKey: `reversal:${entry.idempotencyKey}`,
    kind: `${entry.kind}.reversal`,
    lines: entry.lines.map((l: EntryLine) => ({ account: l.account, amount: -l.amount })),
  };
}
