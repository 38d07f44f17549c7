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
 * Assertions: the balance proofs (made just before, at each chain's proof block) and the trial
 * balance per asset. A proof that could not be made (chain unreadable, transfers not yet booked)
 * is an `error` check and a `balance_proof_failed` finding with its reason, never a pass.
 *
 * The check always owns `balance_proof_failed` on wallets: every wallet not proven is in
 * recon_found (kept open, refreshed), so an open finding of a wallet that now passes, or that left
 * the configuration, resolves, whatever the other wallets' proofs say. An address configured as
 * both merchant and custody is one finding (one ref), listing its roles.
 *
 * A store-scoped run proves only its store's wallets (balanceProofs.ts): it owns the findings of
 * those wallets (by ref: the finding has no store_id, a wallet can be shared), never another
 * store's, nor those of wallets that left the configuration (an unscoped run resolves these).
 */
export async function assertProofs(ctx: CheckContext, proofs: BalanceProof[]): Promise<CheckOutcome> {
  const failed = proofs.filter((p) => p.ok !== true);
  const byRef = new Map<string, BalanceProof[]>();
  for (const p of failed) byRef.set(proofRefId(p), [...(byRef.get(proofRefId(p)) ?? []), p]);
  if (byRef.size > 0) {
    const rows = [...byRef].map(([ref, same]) => {
      // A difference before a proof not made.
      const p = same.find((x) => x.ok === false) ?? (same[0] as BalanceProof);
      return sql`('balance_proof_failed', 'critical', null::text, 'wallet', ${ref},
        ${JSON.stringify({
          chain_id: p.chainId,
          token: p.symbol,
          wallet: p.wallet,
          role: same.map((x) => x.role).join(','),
          store_ids: [...new Set(same.flatMap((x) => x.storeIds))],
          block_number: p.blockNumber?.toString() ?? null,
          ledger_balance: p.ledgerBalance.toString(),
          chain_balance: p.chainBalance?.toString() ?? null,
          error: p.error,
          ...(p.note ? { in_flight: p.inFlight.toString(), note: p.note } : {}),
        })}::jsonb)`;
    });
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
    owned: [
      ctx.storeId === null
        ? { kind: 'balance_proof_failed', refType: 'wallet' }
        : { kind: 'balance_proof_failed', refType: 'wallet', refIds: [...new Set(proofs.map(proofRefId))] },
    ],
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
