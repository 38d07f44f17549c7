import type { Command } from 'commander';
import { CliError } from '../CliError.ts';
import { printResult } from '../output.ts';

export function registerSandbox(program: Command): void {
  program
    .command('sandbox')
    .description('run the simulator of the Merchant Payments Service on local anvil chains')
    .option('--port <port>', 'HTTP port', '8090')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--stores <file>',
      'JSON file of businesses and stores (default: one store with fresh credentials)',
    )
    .option('--chains <ids>', 'comma-separated EIP-155 chain ids', '11155111')
    .option('--rpc-url <chain=url...>', 'use a running node for a chain instead of starting anvil')
    .option('--seed <seed>', 'derive the wallets from this seed (same seed, same addresses)')
    .option('--json', 'print the ready line as JSON')
    .action(
      async (opts: {
        port: string;
        host: string;
        stores?: string;
        chains: string;
        rpcUrl?: string[];
        json?: boolean;
        seed?: string;
      }) => {
        const port = Number(opts.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          throw new CliError(`--port: ${opts.port} is not a port number`);
        const chains = opts.chains.split(',').map((c) => Number(c.trim()));
        if (chains.some((c) => !Number.isSafeInteger(c) || c <= 0))
          throw new CliError(`--chains: ${opts.chains} is not a list of chain ids`);
        const rpcUrls = new Map<number, string>();
        for (const entry of opts.rpcUrl ?? []) {
          const [id, url] = entry.split(/=(.*)/s);
          if (!id || !url || !/^\d+$/.test(id)) throw new CliError(`--rpc-url: ${entry} is not CHAIN_ID=URL`);
          rpcUrls.set(Number(id), url);
        }
        // Loaded on use: the simulator (viem, its contracts) is not for every command; a bad
        // --stores file is reported before it is loaded.
        const { defaultSandboxConfig, loadSandboxConfig } = await import('../../sandbox/sandboxConfig.ts');
        const config = opts.stores ? loadSandboxConfig(opts.stores) : defaultSandboxConfig();
        const { runSandbox } = await import('../../sandbox/runSandbox.ts');
        const sandbox = await runSandbox({ config, host: opts.host, port, chains, rpcUrls, seed: opts.seed });
        const stores = config.businesses.flatMap((b) =>
          b.stores.map((s) => ({
            business_id: b.business_id,
            store_id: s.store_id,
            api_key: s.api_key,
            api_secret: s.api_secret,
          })),
        );
        // Printing the secrets is the point here: they are the sandbox's own throwaway credentials,
        // and a user needs them to configure the daemon or their own integration.
        printResult(
          opts.json,
          { url: sandbox.url, chains: sandbox.chains, stores: opts.stores ? [] : stores },
          (r) =>
            [
              `sandbox ready at ${r.url} (chains: ${r.chains.map((c) => `${c.chainId} ${c.rpcUrl}`).join(', ')})`,
              ...r.stores.map(
                (s) =>
                  `  store ${s.store_id} (business ${s.business_id}): api_key=${s.api_key} api_secret=${s.api_secret}`,
              ),
              '  stop with Ctrl-C',
            ].join('\n'),
        );
        await new Promise<void>((resolve) => {
          const done = () => resolve();
          process.once('SIGINT', done);
          process.once('SIGTERM', done);
        });
        await sandbox.stop();
      },
    );
}
