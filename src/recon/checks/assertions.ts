import { sql } from 'drizzle-orm';
import { trialBalance } from '../../ledger/balances.ts';
import type { BalanceProof } from '../balanceProofs.ts';
import { insertFound } from '../foundFindings.ts';
import type { CheckContext, CheckOutcome } from './checkContext.ts';

/** The ref of a proof's finding: one per (chain, token, wallet). */
export function proofRefId(p: Pick<BalanceProof, 'chainId' | 'token' | 'wallet'>): string {
  return `${p.chainId}:${p.token.toLowerCase()}:${p.wallet.toLowerCase()}`;
}

/**
 * Assertions: the balance proofs (made just before, at each chain's finalized block) and the trial
 * balance per asset. A proof that could not be made (chain unreadable, transfers not yet booked)
 * is a failed check and a `balance_proof_failed` finding with its reason, never a pass.
 */
export async function assertProofs(ctx: CheckContext, proofs: BalanceProof[]): Promise<CheckOutcome> {
  const failed = proofs.filter((p) => p.ok !== true);
  if (failed.length > 0) {
    const rows = failed.map(
      (p) => sql`('balance_proof_failed', 'critical', null::text, 'wallet', ${proofRefId(p)},
        ${JSON.stringify({
          chain_id: p.chainId,
          token: p.symbol,
          wallet: p.wallet,
          role: p.role,
          store_ids: p.storeIds,
          block_number: p.blockNumber?.toString() ?? null,
          ledger_balance: p.ledgerBalance.toString(),
          chain_balance: p.chainBalance?.toString() ?? null,
          error: p.error,
        })}::jsonb)`,
    );
    await insertFound(ctx.tx, sql`values ${sql.join(rows, sql`, `)}`);
  }
  const unreadable = proofs.filter((p) => p.ok === null);
  const status = unreadable.length > 0 ? 'error' : failed.length > 0 ? 'fail' : 'pass';
  const detail =
    proofs.length === 0
      ? 'no watched wallet on a chain with an RPC URL'
      : `${proofs.length - failed.length} of ${proofs.length} (wallet, token) pairs equal balanceOf` +
        (unreadable.length > 0 ? `; ${unreadable.length} could not be proven: ${unreadable[0]?.error}` : '');
  return {
    result: { name: 'assertions.balance_proofs', layer: 'assertions', status, count: failed.length, detail },
    owned: [{ kind: 'balance_proof_failed', refType: 'wallet' }],
  };
}

export async function assertTrialBalance(ctx: CheckContext): Promise<CheckOutcome> {
  const lines = await trialBalance(ctx.tx);
  const off = lines.filter((l) => l.net !== 0n);
  if (off.length > 0) {
    const rows = off.map(
      (l) => sql`('trial_balance_nonzero', 'critical', null::text, 'asset', ${l.asset},
        ${JSON.stringify({ asset: l.asset, token: l.symbol, net: l.net.toString() })}::jsonb)`,
    );
    await insertFound(ctx.tx, sql`values ${sql.join(rows, sql`, `)}`);
  }
  return {
    result: {
      name: 'assertions.trial_balance',
      layer: 'assertions',
      status: off.length === 0 ? 'pass' : 'fail',
      count: off.length,
      detail: `${lines.length} assets; each must net to zero`,
    },
    owned: [{ kind: 'trial_balance_nonzero', refType: 'asset' }],
  };
}
