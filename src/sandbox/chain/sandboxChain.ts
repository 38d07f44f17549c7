import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hash,
  http,
  keccak256,
  type PublicClient,
  parseEventLogs,
  type TransactionReceipt,
  TransactionReceiptNotFoundError,
  toHex,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { rawRpc } from '../../devservices/anvil.ts';
import { sandboxTokenAbi, sandboxTokenBytecode } from './contracts/sandboxTokenArtifact.ts';
import type { CoinSymbol, MinedTransfer, SandboxChain, SandboxToken } from './types.ts';

/** anvil's first pre-funded account: the simulated service deploys and mints with it. */
const ANVIL_DEPLOYER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const GAS_BALANCE = 10n ** 20n; // 100 ETH per wallet: gas is never what a scenario is about
/**
 * A token call's gas limit, given so that nothing is estimated before sending: under load anvil's
 * estimate can read the state from before a receipt it already served (a sweep right after its
 * deposit was refused with "balance"). Mined, the transaction runs against the real state, and a
 * true shortfall still fails as a reverted receipt.
 */
const TOKEN_CALL_GAS = 200_000n;

/**
 * Connects to an anvil node, deploys the sandbox's USDT and USDC there, and signs transfers for
 * labelled wallets whose keys derive from the seed (same seed and label, same address).
 */
export async function createSandboxChain(options: {
  chainId: number;
  rpcUrl: string;
  seed: string;
}): Promise<SandboxChain> {
  const { chainId, rpcUrl, seed } = options;
  const chain = {
    id: chainId,
    name: `sandbox-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  } as const;
  const transport = http(rpcUrl, { timeout: 30_000, retryCount: 2 });
  const publicClient: PublicClient = createPublicClient({ chain, transport });
  const testClient = createTestClient({ mode: 'anvil', chain, transport });
  const actual = await publicClient.getChainId();
  if (actual !== chainId) throw new Error(`sandbox: ${rpcUrl} is chain ${actual}, not ${chainId}`);
  const decimals = chainId === 56 ? 18 : 6;

  // Transactions of one sender go one at a time, so nonces never collide.
  const queues = new Map<string, Promise<unknown>>();
  const serially = <T>(sender: Address, fn: () => Promise<T>): Promise<T> => {
    const previous = queues.get(sender) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(fn);
    queues.set(sender, next);
    return next;
  };

  // Anvil mines a transaction as it accepts it (unless it mines on a timer), so its receipt is
  // there at once: one call. Waiting instead polls the head and, at every new block, asks for the
  // receipt again; with many payments in flight on a chain that mines a block per transaction,
  // those polls were most of the sandbox's and anvil's work, and grew with the number in flight.
  const receiptOf = async (hash: Hash): Promise<TransactionReceipt> => {
    try {
      return await publicClient.getTransactionReceipt({ hash });
    } catch (err) {
      if (!(err instanceof TransactionReceiptNotFoundError)) throw err;
      return publicClient.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    }
  };

  const deployer = privateKeyToAccount(ANVIL_DEPLOYER_KEY);
  const walletClientFor = (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport });
  const deployerClient = walletClientFor(deployer);

  const deploy = async (symbol: CoinSymbol): Promise<SandboxToken> => {
    const hash = await serially(deployer.address, () =>
      deployerClient.deployContract({
        abi: sandboxTokenAbi,
        bytecode: sandboxTokenBytecode,
        args: [symbol === 'USDT' ? 'Tether USD (sandbox)' : 'USD Coin (sandbox)', symbol, decimals],
      }),
    );
    const receipt = await receiptOf(hash);
    if (!receipt.contractAddress) throw new Error(`sandbox: deploying ${symbol} on chain ${chainId} failed`);
    return { symbol, address: receipt.contractAddress, decimals };
  };
  const tokens: Record<CoinSymbol, SandboxToken> = { USDT: await deploy('USDT'), USDC: await deploy('USDC') };

  const accounts = new Map<string, Promise<PrivateKeyAccount>>();
  const accountFor = (label: string): Promise<PrivateKeyAccount> => {
    let account = accounts.get(label);
    if (!account) {
      account = (async () => {
        const key = keccak256(toHex(`stablebooks-sandbox:${seed}:${label}`));
        const acct = privateKeyToAccount(key);
        await testClient.setBalance({ address: acct.address, value: GAS_BALANCE });
        return acct;
      })();
      accounts.set(label, account);
    }
    return account;
  };

  const mined = async (hash: Hash, token: SandboxToken): Promise<MinedTransfer> => {
    const receipt = await receiptOf(hash);
    if (receipt.status !== 'success') throw new Error(`sandbox: transaction ${hash} reverted`);
    const [log] = parseEventLogs({ abi: sandboxTokenAbi, logs: receipt.logs, eventName: 'Transfer' }).filter(
      (l) => l.address.toLowerCase() === token.address.toLowerCase(),
    );
    return {
      txHash: hash,
      blockNumber: receipt.blockNumber,
      blockHash: receipt.blockHash,
      logIndex: log?.logIndex ?? 0,
    };
  };

  return {
    chainId,
    rpcUrl,
    decimals,
    tokens,
    wallet: async (label) => (await accountFor(label)).address,
    async mint(symbol, to, amount) {
      const token = tokens[symbol];
      const hash = await serially(deployer.address, () =>
        deployerClient.writeContract({
          address: token.address,
          abi: sandboxTokenAbi,
          functionName: 'mint',
          args: [to, amount],
          gas: TOKEN_CALL_GAS,
        }),
      );
      return mined(hash, token);
    },
    async transfer(symbol, fromLabel, to, amount) {
      const token = tokens[symbol];
      const account = await accountFor(fromLabel);
      const client = walletClientFor(account);
      const hash = await serially(account.address, () =>
        client.writeContract({
          address: token.address,
          abi: sandboxTokenAbi,
          functionName: 'transfer',
          args: [to, amount],
          gas: TOKEN_CALL_GAS,
        }),
      );
      return mined(hash, token);
    },
    balanceOf: (symbol, owner) =>
      publicClient.readContract({
        address: tokens[symbol].address,
        abi: sandboxTokenAbi,
        functionName: 'balanceOf',
        args: [owner],
      }),
    async reorg(depth) {
      const head = await publicClient.getBlockNumber({ cacheTime: 0 });
      if (depth < 1 || BigInt(depth) > head)
        throw new RangeError(`reorg depth must be between 1 and the head block ${head}`);
      await rawRpc(rpcUrl, 'anvil_reorg', [depth, []]);
      const orphanedBlocks: bigint[] = [];
      for (let i = 0; i < depth; i++) orphanedBlocks.push(head - BigInt(i));
      return { orphanedBlocks };
    },
    async mine(blocks) {
      await testClient.mine({ blocks });
    },
    headBlock: () => publicClient.getBlockNumber({ cacheTime: 0 }),
  };
}
