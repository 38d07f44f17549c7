import type { FastifyInstance } from 'fastify';
import { type EphemeralAnvil, startAnvil } from '../devservices/anvil.ts';
import { createSandboxWorld } from './createWorld.ts';
import { sandboxRouteModules } from './routeModules.ts';
import type { SandboxConfig } from './sandboxConfig.ts';
import { createSandboxServer } from './server.ts';
import type { SandboxWorld } from './world.ts';

export interface RunningSandbox {
  url: string;
  config: SandboxConfig;
  world: SandboxWorld;
  chains: Array<{ chainId: number; rpcUrl: string }>;
  stop(): Promise<void>;
}

/**
 * Starts the simulator: one anvil per chain (unless an RPC URL is given for it), the world on
 * them, and the HTTP server. stop() closes the server, the world's timers, then the nodes it started.
 */
export async function runSandbox(options: {
  config: SandboxConfig;
  host: string;
  port: number;
  chains: number[];
  rpcUrls: Map<number, string>;
  seed?: string;
}): Promise<RunningSandbox> {
  const started: EphemeralAnvil[] = [];
  let app: FastifyInstance | undefined;
  let closeWorld: (() => void) | undefined;
  const stop = async () => {
    closeWorld?.();
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
    const world = await createSandboxWorld({ config: options.config, chains, seed: options.seed });
    closeWorld = world.close;
    const routes = sandboxRouteModules(world);
    closeWorld = () => {
      routes.stop();
      world.close();
    };
    app = createSandboxServer(world, routes.modules);
    const url = await app.listen({ host: options.host, port: options.port });
    world.setBaseUrl(url);
    return { url, config: options.config, world, chains, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
