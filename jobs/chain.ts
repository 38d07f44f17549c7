import { type Job, UnrecoverableError } from 'bullmq';
import { type IndexerDeps, type IndexOutcome, indexChainPass } from '../src/chain/indexChain.ts';
import type { ChainRpc } from '../src/chain/rpcClients.ts';
import type { Metrics } from '../src/metrics/metrics.ts';
import { type VerifyDeps, verifyPayments } from '../src/payments/verifyPayments.ts';
import { type ProofDeps, proveBalances, recordProofMetrics } from '../src/recon/balanceProofs.ts';
import type { SettlementDeps } from '../src/settlement/settlementDeps.ts';
import { type ApplyOutcome, settleTransfers } from '../src/settlement/settleTransfers.ts';
import { chainJobs } from './queues.ts';

/** What the chain queue's jobs need, built once per process. */
export interface ChainJobDeps {
  rpcs: Map<number, ChainRpc>;
  indexerFor(chainId: number): IndexerDeps | undefined;
  apply: SettlementDeps;
  verify: VerifyDeps;
  prove: ProofDeps;
  metrics: Metrics;
}

/**
 * chain queue:
 * - `chain.index`: one indexer pass over one chain (src/chain/indexChain.ts), then the matching of
 *   what became final or orphaned (src/settlement/settleTransfers.ts). The pass never throws for RPC
 *   trouble or a reorg (its outcome says so) and skips when another process holds the chain's
 *   lock; a failure here is the database's, which a retry can help;
 * - `chain.verify`: receipts of confirmed payments the indexer has not proven in time;
 * - `chain.prove`: balance proofs of every watched wallet.
 * A chain with no RPC client is a configuration error no retry fixes.
 */
export function chainProcessor(deps: ChainJobDeps) {
  return async (job: Job): Promise<unknown> => {
    switch (job.name) {
      case chainJobs.index.name: {
        const { chainId } = chainJobs.index.data.parse(job.data);
        const indexer = deps.indexerFor(chainId);
        if (!indexer) {
          throw new UnrecoverableError(
            `chain ${chainId}: no RPC client; set RPC_URL_${chainId} or remove the job`,
          );
        }
        const indexed = await indexChainPass(indexer, chainId);
        const applied = await settleTransfers(deps.apply, chainId);
        return { ...outcomeSummary(indexed), ...appliedSummary(applied) };
      }
      case chainJobs.verifyPayments.name:
        return verifyPayments(deps.verify);
      case chainJobs.prove.name: {
        const proofs = await proveBalances(deps.prove);
        recordProofMetrics(deps.metrics, proofs);
        return { proofs: proofs.length, failed: proofs.filter((p) => p.ok !== true).length };
      }
      default:
        throw new UnrecoverableError(`unknown chain job ${job.name}`);
    }
  };
}

/** JSON-safe (BullMQ stores the return value): block numbers as strings. */
function outcomeSummary(o: IndexOutcome): Record<string, string | number | null> {
  return {
    skipped: o.skipped ?? null,
    from_block: o.fromBlock === null ? null : o.fromBlock.toString(),
    to_block: o.toBlock === null ? null : o.toBlock.toString(),
    transfers_found: o.transfersFound,
    finalized: o.finalized,
    orphaned: o.orphaned,
    reorg_depth: o.reorgDepth ?? null,
    lag: o.lag,
    error: o.error ?? null,
  };
}

function appliedSummary(a: ApplyOutcome): Record<string, number> {
  return { applied: a.applied, deferred: a.deferred, unwound: a.unwound };
}
