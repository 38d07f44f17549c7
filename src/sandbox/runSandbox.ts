import type { FastifyInstance } from 'fastify';
import { systemClock } from '../clock.ts';
import { type EphemeralAnvil, startAnvil } from '../devservices/anvil.ts';
import type { SandboxConfig } from './sandboxConfig.ts';
import { createSandboxServer } from './server.ts';

export interface RunningSandbox {
  url: string;
  config: SandboxConfig;
  chains: Array<{ chainId: number; rpcUrl: string }>;
  stop(): Promise<void>;
}

/**
 * Starts the simulator: one anvil per chain (unless an RPC URL is given for it) and the signed
 * HTTP API. stop() closes the server, then the nodes it started.
 */
export async function runSandbox(options: {
  config: SandboxConfig;
  host: string;
  port: number;
  chains: number[];
  rpcUrls: Map<number, string>;
}): Promise<RunningSandbox> {
  const started: EphemeralAnvil[] = [];
  let app: FastifyInstance | undefined;
  const stop = async () => {
    await app?.close();
    await Promise.allSettled(started.map((a) => a.stop()));
  };
  try {
    const chains: RunningSandbox['chains'] = [];
    for (const chainId of options.chains) {
      const given = options.rpcUrls.get(chainId);
      if (given) {
        chains.push({ chainId, rpcUrl: given });
        continue;
      }
      const anvil = await startAnvil({ chainId });
      started.push(anvil);
      chains.push({ chainId, rpcUrl: anvil.rpcUrl });
    }
    app = createSandboxServer({ config: options.config, clock: systemClock });
    const url = await app.listen({ host: options.host, port: options.port });
    return { url, config: options.config, chains, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
