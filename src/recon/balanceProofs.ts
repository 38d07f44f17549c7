import { sql } from 'drizzle-orm';
import type { PublicClient } from 'viem';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/database.ts';
import { type AccountKind, account, accountCode } from '../ledger/accounts.ts';
import { accountBalance } from '../ledger/balances.ts';
import type { Metrics } from '../metrics/metrics.ts';

/**
 * The one ERC-20 function a proof calls. Written out rather than viem's erc20Abi, so that loading
 * the reconciliation run does not load viem (~35 MB of a process's memory) when the clients
 * passed in already have it.
 */
const BALANCE_OF_ABI = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
] as const;

/**
 * Balance proofs (DESIGN.md section 6): for each watched (chain, token, wallet), the ledger's
 * balance of the accounts that hold that wallet equals balanceOf(wallet) at a finalized block.
 * The strongest check the daemon makes. The ledger side is read in one snapshot with the block
 * it is proven at (the indexer's finalized block), and only when every final transfer up to that
 * block is booked; otherwise, or when the chain cannot be read, the proof fails with a reason:
 * a balance that could not be read is never a zero.
 *
 * - merchant wallet: accounts assets:wallet of the stores paid into it;
 * - custody wallet: accounts assets:custody of the stores funding links from it (a business's
 *   stores share one).
 */
export interface BalanceProof {
  chainId: number;
  symbol: string;
  token: string;
  decimals: number;
  wallet: string;
  role: 'merchant' | 'custody';
  storeIds: string[];
  blockNumber: bigint | null;
  ledgerBalance: bigint;
  chainBalance: bigint | null;
  /** true: equal; false: they differ; null: could not be proven (see error). */
  ok: boolean | null;
  error: string | null;
}

export interface ProofDeps {
  db: Db;
  config: Pick<Config, 'stores' | 'chains'>;
  rpcs: Map<number, { client: PublicClient }>;
}

interface WalletToProve {
  chainId: number;
  wallet: string;
  role: 'merchant' | 'custody';
  storeIds: string[];
}

function walletsToProve(config: ProofDeps['config']): WalletToProve[] {
  const byKey = new Map<string, WalletToProve>();
  for (const store of config.stores) {
    for (const [chainId, w] of store.wallets) {
      for (const role of ['merchant', 'custody'] as const) {
        const wallet = w[role].toLowerCase();
        const key = `${chainId}:${role}:${wallet}`;
        const entry = byKey.get(key) ?? { chainId, wallet, role, storeIds: [] };
        entry.storeIds.push(store.storeId);
        byKey.set(key, entry);
      }
    }
  }
  return [...byKey.values()];
}

/** Proves every watched wallet and token (of one chain when given) and stores the results. */
export async function proveBalances(
  deps: ProofDeps,
  options: { chainId?: number } = {},
): Promise<BalanceProof[]> {
  const proofs: BalanceProof[] = [];
  for (const target of walletsToProve(deps.config)) {
    if (options.chainId !== undefined && target.chainId !== options.chainId) continue;
    for (const token of deps.config.chains.chain(target.chainId)?.tokens ?? []) {
      proofs.push(await proveOne(deps, target, token));
    }
  }
  for (const p of proofs) {
    await deps.db.execute(sql`
      insert into balance_proofs (chain_id, token, symbol, wallet, role, block_number, ledger_balance, chain_balance, ok, error, details)
      values (${p.chainId}, ${p.token}, ${p.symbol}, ${p.wallet}, ${p.role}, ${p.blockNumber?.toString() ?? null}::bigint,
              ${p.ledgerBalance.toString()}::numeric, ${p.chainBalance?.toString() ?? null}::numeric, ${p.ok}, ${p.error},
              ${JSON.stringify({ store_ids: p.storeIds })}::jsonb)`);
  }
  return proofs;
}

async function proveOne(
  deps: ProofDeps,
  target: WalletToProve,
  token: { chainId: number; address: `0x${string}`; symbol: string; decimals: number },
): Promise<BalanceProof> {
  const kind: AccountKind = target.role === 'merchant' ? 'assets:wallet' : 'assets:custody';
  const codes = target.storeIds.map((s) => accountCode(account(kind, s, token)));
  const base = {
    chainId: target.chainId,
    symbol: token.symbol,
    token: token.address,
    decimals: token.decimals,
    wallet: target.wallet,
    role: target.role,
    storeIds: target.storeIds,
  };
  const snapshot = await deps.db.transaction(
    async (tx) => {
      const cursor = (
        await tx.execute<{ finalized_block: string | null }>(
          sql`select finalized_block::text from chain_cursors where chain_id = ${target.chainId}`,
        )
      ).rows[0];
      const block = cursor?.finalized_block ? BigInt(cursor.finalized_block) : null;
      const waiting =
        block === null
          ? 0
          : Number(
              (
                await tx.execute<{ n: string }>(sql`
            select count(*)::text as n from chain_transfers
            where chain_id = ${target.chainId} and token = ${token.address} and state = 'final' and applied_at is null
              and block_number <= ${block.toString()}::bigint
              and (from_address = ${target.wallet} or to_address = ${target.wallet})`)
              ).rows[0]?.n ?? '0',
            );
      const ids = await tx.execute<{ id: string }>(sql`
        select id::text from ledger_accounts where code in (${sql.join(
          codes.map((c) => sql`${c}`),
          sql`, `,
        )})`);
      let ledger = 0n;
      for (const { id } of ids.rows) ledger += await accountBalance(tx, BigInt(id));
      return { block, waiting, ledger };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
  const failed = (error: string, chainBalance: bigint | null = null): BalanceProof => ({
    ...base,
    blockNumber: snapshot.block,
    ledgerBalance: snapshot.ledger,
    chainBalance,
    ok: null,
    error,
  });
  if (snapshot.block === null)
    return failed('the chain has not been indexed yet: no finalized block to prove at');
  if (snapshot.waiting > 0)
    return failed(`${snapshot.waiting} final transfer(s) up to block ${snapshot.block} are not matched yet`);
  const rpc = deps.rpcs.get(target.chainId);
  if (!rpc) return failed(`no RPC URL for chain ${target.chainId}`);
  let chainBalance: bigint;
  try {
    chainBalance = await rpc.client.readContract({
      address: token.address,
      abi: BALANCE_OF_ABI,
      functionName: 'balanceOf',
      args: [target.wallet as `0x${string}`],
      blockNumber: snapshot.block,
    });
  } catch (err) {
    return failed(`balanceOf could not be read: ${(err as Error).message.split('\n')[0]}`);
  }
  return {
    ...base,
    blockNumber: snapshot.block,
    ledgerBalance: snapshot.ledger,
    chainBalance,
    ok: chainBalance === snapshot.ledger,
    error: null,
  };
}

/**
 * Publishes proofs as the balance-proof gauges (1 equal, 0 differs, -1 could not be proven), from
 * the periodic prove job and from every reconciliation run, so the dashboard and the
 * BalanceProofFailed alert follow the latest proof, whoever made it. A series is a chain, token
 * and wallet role, which several stores' wallets can share: it shows the worst of them (a
 * difference before an unproven wallet before a proven one), and the largest drift.
 */
export function recordProofMetrics(
  metrics: Pick<Metrics, 'balanceProofOk' | 'balanceProofDrift'>,
  proofs: BalanceProof[],
): void {
  const series = new Map<string, { labels: Record<string, string>; ok: number; drift: number | null }>();
  for (const p of proofs) {
    const labels = { chain_id: String(p.chainId), token: p.symbol, role: p.role };
    const key = `${labels.chain_id} ${labels.token} ${labels.role}`;
    const ok = p.ok === null ? -1 : p.ok ? 1 : 0;
    // Display only (a float): the exact drift is in balance_proofs and the report.
    const drift =
      p.chainBalance === null ? null : Number(p.ledgerBalance - p.chainBalance) / 10 ** p.decimals;
    const seen = series.get(key);
    const worse = (a: number, b: number) => (a === 0 || b === 0 ? 0 : Math.min(a, b));
    series.set(key, {
      labels,
      ok: seen ? worse(seen.ok, ok) : ok,
      drift:
        seen?.drift != null && (drift === null || Math.abs(seen.drift) >= Math.abs(drift))
          ? seen.drift
          : drift,
    });
  }
  for (const { labels, ok, drift } of series.values()) {
    metrics.balanceProofOk.set(labels, ok);
    if (drift !== null) metrics.balanceProofDrift.set(labels, drift);
  }
}
