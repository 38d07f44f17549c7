import { erc20Abi, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { createChainDouble, type SimTransfer } from '../../sim/chainDouble.ts';
import { receiptTransfers } from '../../src/chain/receiptTransfers.ts';
import { createChainRegistry } from '../../src/config/chainRegistry.ts';

/** The chain double's reads beyond the indexer's: balanceOf at a block (balance proofs) and receipts (verifyPayments). */
const hex = (n: number, width: number): Hex => `0x${n.toString(16).padStart(width, '0')}`;
const TOKEN = hex(0xaa, 40);
const send = (n: number, from: number, to: number, value: bigint): SimTransfer => ({
  token: TOKEN,
  from: hex(from, 40),
  to: hex(to, 40),
  value,
  txHash: hex(n, 64),
});

describe('chain double reads', () => {
  it('answers balanceOf at a block and at the head, through viem readContract', async () => {
    const chain = createChainDouble(31337, 2);
    chain.send(send(1, 1, 2, 100n));
    chain.mine(1_700_000_010n);
    chain.send(send(2, 2, 3, 30n));
    chain.mine(1_700_000_020n);
    const { client } = chain.rpc();
    const read = (blockNumber?: bigint) =>
      client.readContract({
        address: TOKEN,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [hex(2, 40)],
        ...(blockNumber === undefined ? {} : { blockNumber }),
      });
    expect(await read(1n)).toBe(100n);
    expect(await read(2n)).toBe(70n);
    expect(await read()).toBe(70n);
    expect(await read(0n)).toBe(0n);
  });

  it('answers a receipt with the transaction logs while its block is canonical, none after a drop', async () => {
    const chain = createChainDouble(31337, 2);
    chain.send(send(1, 1, 2, 100n));
    chain.send(send(2, 1, 3, 5n));
    chain.mine(1_700_000_010n);
    const registry = createChainRegistry([
      {
        chain_id: 31337,
        name: 'sim',
        tokens: { USDT: { address: TOKEN, decimals: 6 }, USDC: { address: hex(0xbb, 40), decimals: 6 } },
        finality: { finalized_tag: false, depth: 2 },
        start_block: 0,
        reorg_window: 80,
      },
    ]);
    const receipt = await receiptTransfers(chain.rpc(), registry, 31337, hex(2, 64));
    expect(receipt.status).toBe('success');
    if (receipt.status !== 'success') return;
    expect(receipt.blockNumber).toBe(1n);
    expect(receipt.transfers.map((t) => [t.to, t.amount])).toEqual([[hex(3, 40), 5n]]);
    chain.reorg(1, { kind: 'drop', target: hex(2, 64) });
    expect((await receiptTransfers(chain.rpc(), registry, 31337, hex(2, 64))).status).toBe('not_found');
  });
});
