import { rawRpc } from '../devservices/anvil.ts';

export interface BlockMiner {
  /** Stops mining after the block in flight (a reorg needs a still chain). */
  pause(): Promise<void>;
  resume(): void;
  stop(): Promise<void>;
}

/**
 * Mines a block every `intervalMs` on anvil, which otherwise mines only when a transaction
 * arrives: without it, a payment's block would never get `depth` blocks on top, and nothing
 * would become final.
 */
export function startBlockMiner(rpcUrl: string, intervalMs: number): BlockMiner {
  let paused = false;
  let stopped = false;
  let inFlight: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (paused || stopped) return;
    inFlight = inFlight.then(() => rawRpc(rpcUrl, 'anvil_mine', ['0x1']).catch(() => undefined));
  }, intervalMs);
  timer.unref();
  return {
    async pause() {
      paused = true;
      await inFlight;
    },
    resume() {
      paused = false;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
    },
  };
}
