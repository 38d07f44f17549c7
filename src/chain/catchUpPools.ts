import type { Db } from '../db/database.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { type LogRangeState, readAdaptiveRange } from './getLogsAdaptive.ts';
import { readTransferRange } from './readTransferRange.ts';
import type { ChainRpc } from './rpcClients.ts';
import { storeTransfers } from './storeTransfers.ts';
import { markPoolCaughtUp, poolsToCatchUp } from './watchedWallets.ts';

/**
 * Claim-link pools learnt after the indexer read past their funding: their Transfer logs from
 * from_block up to the cursor are read, then the pool is marked caught up (from then on the
 * regular reading covers it). A pool not finished in this pass is read again from its from_block
 * next pass; rows are idempotent.
 */
export async function catchUpPools(
  deps: { db: Db; rpc: ChainRpc; metrics: Metrics; logger: Logger },
  input: { contracts: readonly string[]; cursorBlock: bigint; range: LogRangeState },
): Promise<number> {
  const chainId = deps.rpc.chainId;
  const pools = await poolsToCatchUp(deps.db, chainId);
  let found = 0;
  for (const pool of pools) {
    let from = pool.fromBlock;
    while (from <= input.cursorBlock) {
      const read = await readAdaptiveRange(input.range, from, input.cursorBlock, (a, b) =>
        readTransferRange(deps.rpc.client, chainId, input.contracts, [pool.address], a, b),
      );
      const ids = await storeTransfers(deps.db, read.value.facts, 'logs');
      found += ids.length;
      deps.metrics.chainTransfersIndexed.inc({ chain_id: String(chainId) }, ids.length);
      from = read.toBlock + 1n;
    }
    await markPoolCaughtUp(deps.db, chainId, pool.address);
    deps.logger.info({ pool: pool.address, from_block: String(pool.fromBlock) }, 'claim-link pool caught up');
  }
  return found;
}
