import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { startManagedProcess, waitUntilReady } from './childProcess.ts';
import { freePort } from './freePort.ts';

export interface EphemeralAnvil {
  rpcUrl: string;
  chainId: number;
  stop(): Promise<void>;
}

/**
 * The anvil binary ships inside a platform package of @foundry-rs/anvil, so it is there after
 * `npm ci` even when install scripts are skipped. We run it directly rather than through the
 * package's node wrapper so that signals reach anvil itself.
 */
export function anvilBinaryPath(): string {
  const require = createRequire(import.meta.url);
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const platform = process.platform === 'win32' ? 'win32' : process.platform;
  const pkg = `@foundry-rs/anvil-${platform}-${arch}`;
  let dir: string;
  try {
    dir = dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    throw new Error(`anvil not found: the npm package ${pkg} is missing (run npm ci)`);
  }
  const binary = join(dir, 'bin', platform === 'win32' ? 'anvil.exe' : 'anvil');
  if (!existsSync(binary)) throw new Error(`anvil not found at ${binary} (run npm ci)`);
  return binary;
}

/**
 * One raw JSON-RPC call: for the node's own methods viem has no action for (anvil_reorg,
 * anvil_mine with a count, evm_setAutomine, eth_getRawTransactionByHash). Throws the node's error.
 */
export async function rawRpc<T = unknown>(
  rpcUrl: string,
  method: string,
  params: unknown[],
  options: { timeoutMs?: number } = {},
): Promise<T> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

async function rpcChainId(rpcUrl: string): Promise<number | undefined> {
  const id = await rawRpc<string | undefined>(rpcUrl, 'eth_chainId', [], { timeoutMs: 1000 });
  return id ? Number.parseInt(id, 16) : undefined;
}

/**
 * A local EVM node on a free port; blocks are mined on every transaction, or every
 * `blockTimeSeconds` as well when given (a chain that keeps moving, as the idle bench needs).
 */
export async function startAnvil(
  options: { chainId?: number; blockTimeSeconds?: number } = {},
): Promise<EphemeralAnvil> {
  const chainId = options.chainId ?? 31337;
  const port = await freePort();
  const proc = startManagedProcess(anvilBinaryPath(), [
    ...(options.blockTimeSeconds ? ['--block-time', String(options.blockTimeSeconds)] : []),
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--chain-id',
    String(chainId),
    '--silent',
    // Without this anvil writes every old block's state under ~/.foundry/anvil/tmp and never
    // deletes it: gigabytes per test run. 512 recent states in memory cover every historical read
    // we make (balanceOf at the finalized block, at most 64 blocks back on anvil).
    '--prune-history',
    '512',
  ]);
  const rpcUrl = `http://127.0.0.1:${port}`;
  await waitUntilReady(proc, 'anvil', async () => (await rpcChainId(rpcUrl)) === chainId);
  return { rpcUrl, chainId, stop: () => proc.stop('SIGTERM') };
}
