import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { type BalanceProof, recordProofMetrics } from '../../../src/recon/balanceProofs.ts';

function proof(patch: Partial<BalanceProof>): BalanceProof {
  return {
    chainId: 1,
    symbol: 'USDT',
    token: '0x0000000000000000000000000000000000000001',
    decimals: 6,
    wallet: '0x00000000000000000000000000000000000000aa',
    role: 'merchant',
    storeIds: ['st_a'],
    blockNumber: 10n,
    ledgerBalance: 5_000_000n,
    chainBalance: 5_000_000n,
    ok: true,
    error: null,
    inFlight: 0n,
    note: null,
    notAddedBack: [],
    ...patch,
  };
}

async function gauge(metrics: ReturnType<typeof createMetrics>, name: string) {
  const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name) as {
    values: Array<{ value: number; labels: Record<string, string> }>;
  };
  return m.values.map((v) => `${v.labels.role} ${v.labels.token} ${v.value}`).sort();
}

describe('recordProofMetrics', () => {
  it('behavior: a failing wallet is not hidden by a passing wallet of another store in the same series', async () => {
    const metrics = createMetrics();
    recordProofMetrics(metrics, [
      proof({ wallet: '0xa', ledgerBalance: 7_500_000n, ok: false }),
      proof({ wallet: '0xb' }),
      proof({ role: 'custody', ok: null, chainBalance: null, error: 'rpc down' }),
      proof({ role: 'custody', wallet: '0xc' }),
      proof({ symbol: 'USDC' }),
    ]);
    expect(await gauge(metrics, 'stablebooks_balance_proof_ok')).toEqual([
      'custody USDT -1',
      'merchant USDC 1',
      'merchant USDT 0',
    ]);
    expect(await gauge(metrics, 'stablebooks_balance_proof_drift')).toEqual([
      'custody USDT 0',
      'merchant USDC 0',
      'merchant USDT 2.5',
    ]);
  });
});
