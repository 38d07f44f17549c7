import { createPublicClient, http, parseAbiItem } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EphemeralAnvil, startAnvil } from '../../../src/devservices/anvil.ts';
import { createSandboxChain } from '../../../src/sandbox/chain/sandboxChain.ts';
import type { SandboxChain } from '../../../src/sandbox/chain/types.ts';

let anvil: EphemeralAnvil;
let bnbAnvil: EphemeralAnvil;
let chain: SandboxChain;

beforeAll(async () => {
  [anvil, bnbAnvil] = await Promise.all([startAnvil({ chainId: 11155111 }), startAnvil({ chainId: 56 })]);
  chain = await createSandboxChain({ chainId: 11155111, rpcUrl: anvil.rpcUrl, seed: 'test' });
});
afterAll(async () => {
  await Promise.all([anvil?.stop(), bnbAnvil?.stop()]);
});

describe('sandbox chain', () => {
  it('behavior: deploys USDT and USDC with 6 decimals, and 18 on BNB', async () => {
    expect(chain.tokens.USDT.decimals).toBe(6);
    expect(chain.tokens.USDC.address).not.toBe(chain.tokens.USDT.address);
    const bnb = await createSandboxChain({ chainId: 56, rpcUrl: bnbAnvil.rpcUrl, seed: 'test' });
    expect(bnb.decimals).toBe(18);
    expect(bnb.tokens.USDT.decimals).toBe(18);
  });

  it('behavior: labelled wallets are stable, and transfers move real tokens with Transfer logs', async () => {
    const a = await chain.wallet('buyer:1');
    expect(await chain.wallet('buyer:1')).toBe(a);
    const b = await chain.wallet('merchant:st_a');
    await chain.mint('USDC', a, 7_000_000n);
    // Several transfers from one wallet at once: nonces must not collide.
    const sent = await Promise.all(
      [1n, 2n, 3n].map((n) => chain.transfer('USDC', 'buyer:1', b, n * 1_000_000n)),
    );
    expect(await chain.balanceOf('USDC', a)).toBe(1_000_000n);
    expect(await chain.balanceOf('USDC', b)).toBe(6_000_000n);
    const client = createPublicClient({ transport: http(anvil.rpcUrl) });
    const logs = await client.getLogs({
      address: chain.tokens.USDC.address,
      event: parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)'),
      args: { to: b },
      fromBlock: 0n,
    });
    expect(logs.map((l) => l.transactionHash).sort()).toEqual(sent.map((s) => s.txHash).sort());
  });

  it('behavior: a reorg orphans the transfers in the replaced blocks', async () => {
    const to = await chain.wallet('merchant:st_reorg');
    await chain.mint('USDT', to, 7n);
    expect(await chain.balanceOf('USDT', to)).toBe(7n);
    const head = await chain.headBlock();
    const { orphanedBlocks } = await chain.reorg(1);
    expect(orphanedBlocks).toEqual([head]);
    expect(await chain.balanceOf('USDT', to)).toBe(0n);
  });
});
