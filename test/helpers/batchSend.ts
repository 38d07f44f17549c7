import { createRequire } from 'node:module';
import { encodeFunctionData, type Hex, maxUint256, parseAbi } from 'viem';

/**
 * Several ERC-20 transfers out of one wallet in ONE transaction, each its own Transfer log, on the
 * test's anvil: a small contract pulls them with transferFrom (the wallet approved it once), sent
 * by one of anvil's unlocked accounts, as a service paying a link's principal and fee apart,
 * funding several links at once or refunding in pieces would.
 */
const SOURCE = `// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;
interface IERC20 { function transferFrom(address from, address to, uint256 value) external returns (bool); }
contract BatchSend {
  function send(address token, address from, address[] calldata to, uint256[] calldata value) external {
    for (uint256 i = 0; i < to.length; i++) require(IERC20(token).transferFrom(from, to[i], value[i]));
  }
}`;
const abi = parseAbi([
  'function send(address token, address from, address[] to, uint256[] value)',
  'function approve(address spender, uint256 value) returns (bool)',
]);
/** anvil's second pre-funded account (the sandbox deploys with the first). */
const CALLER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

type Raw = (method: string, params: unknown[]) => Promise<unknown>;

export interface BatchSender {
  /** Sends a transaction through anvil and waits for its receipt; throws when it reverted. */
  sendTransaction(request: Record<string, unknown>): Promise<{ txHash: Hex; contractAddress: Hex | null }>;
  /** Lets the contract move `token` out of `from` (impersonated for the approval). */
  approve(token: Hex, from: Hex): Promise<void>;
  /** One transaction: `from` pays each `to[i]` `values[i]` of `token`, one log each, in order. */
  send(token: Hex, from: Hex, to: Hex[], values: bigint[]): Promise<{ txHash: Hex }>;
}

/** `raw`: the test kit's JSON-RPC call to anvil. The contract is compiled and deployed once. */
export function batchSender(raw: Raw): BatchSender {
  let deployed: Promise<Hex> | undefined;
  const sendTransaction: BatchSender['sendTransaction'] = async (request) => {
    const txHash = (await raw('eth_sendTransaction', [request])) as Hex;
    type Receipt = { status: string; contractAddress: Hex | null } | null;
    let receipt: Receipt = null;
    for (let i = 0; i < 100 && !receipt; i++) {
      receipt = (await raw('eth_getTransactionReceipt', [txHash])) as Receipt;
      if (!receipt) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (receipt?.status !== '0x1') throw new Error(`transaction ${txHash} not mined or reverted`);
    return { txHash, contractAddress: receipt.contractAddress };
  };
  const deploy = (): Promise<Hex> => {
    deployed ??= (async () => {
      const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
      const output = JSON.parse(
        solc.compile(
          JSON.stringify({
            language: 'Solidity',
            sources: { 'BatchSend.sol': { content: SOURCE } },
            settings: { evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.bytecode.object'] } } },
          }),
        ),
      );
      const bytecode = output.contracts['BatchSend.sol'].BatchSend.evm.bytecode.object as string;
      const { contractAddress } = await sendTransaction({ from: CALLER, data: `0x${bytecode}` });
      if (!contractAddress) throw new Error('BatchSend not deployed');
      return contractAddress;
    })();
    return deployed;
  };
  return {
    sendTransaction,
    async approve(token, from) {
      const contract = await deploy();
      await raw('anvil_impersonateAccount', [from]);
      try {
        await sendTransaction({
          from,
          to: token,
          data: encodeFunctionData({ abi, functionName: 'approve', args: [contract, maxUint256] }),
        });
      } finally {
        await raw('anvil_stopImpersonatingAccount', [from]);
      }
    },
    async send(token, from, to, values) {
      const contract = await deploy();
      return sendTransaction({
        from: CALLER,
        to: contract,
        data: encodeFunctionData({ abi, functionName: 'send', args: [token, from, to, values] }),
      });
    },
  };
}
