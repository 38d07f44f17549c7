import { coerceError } from '../errors/coerceError.ts';
/**
 * One shutdown registry per process: parts register their stop in start order and stop in the
 * reverse order (HTTP first, so no new work arrives; then workers drain; then queues, Redis and
 * the pool), each bounded by a timeout so one stuck part cannot hold the exit.
 */
export interface Shutdown {
  add(name: string, stop: () => Promise<unknown>): void;
  run(timeoutMs: number): Promise<{ name: string; error?: string }[]>;
}

export function createShutdown(): Shutdown {
  const parts: Array<{ name: string; stop: () => Promise<unknown> }> = [];
  let running: Promise<{ name: string; error?: string }[]> | undefined;
  return {
    add: (name, stop) => parts.push({ name, stop }),
    run(timeoutMs) {
      running ??= (async () => {
        const results: { name: string; error?: string }[] = [];
        for (const part of parts.reverse()) {
          let timer: NodeJS.Timeout | undefined;
          try {
            await Promise.race([
              part.stop(),
              new Promise((_, reject) => {
                timer = setTimeout(() => reject(new Error(`did not stop within ${timeoutMs} ms`)), timeoutMs);
              }),
            ]);
            results.push({ name: part.name });
          } catch (err) {
            results.push({ name: part.name, error: coerceError(err).message });
          } finally {
            clearTimeout(timer);
          }
        }
        return results;
      })();
      return running;
    },
  };
}
