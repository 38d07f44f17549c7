import { createConnection } from 'node:net';
import { startManagedProcess, waitUntilReady } from './childProcess.ts';
import { findBinary } from './findBinary.ts';
import { freePort } from './freePort.ts';

export interface EphemeralRedis {
  url: string;
  stop(): Promise<void>;
}

/** Sends PING over a raw socket, so readiness does not depend on a client library's retry policy. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.setTimeout(1000);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      resolve(data.toString().startsWith('+PONG'));
      socket.destroy();
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      resolve(false);
      socket.destroy();
    });
  });
}

export interface EphemeralRedisOptions {
  /**
   * Listen on this port instead of a free one: a test that stops its Redis starts a new one on the
   * old port, so clients reconnect to the same URL (to an empty Redis: nothing persists).
   */
  port?: number;
}

/** A throwaway redis-server on a loopback port (a free one by default) with no persistence at all. */
export async function startEphemeralRedis(options: EphemeralRedisOptions = {}): Promise<EphemeralRedis> {
  const binary = findBinary({ name: 'redis-server', debianPackage: 'redis-server', brewFormula: 'redis' });
  const port = options.port ?? (await freePort());
  const proc = startManagedProcess(binary, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
  ]);
  await waitUntilReady(proc, 'redis-server', () => ping(port));
  return { url: `redis://127.0.0.1:${port}`, stop: () => proc.stop('SIGTERM') };
}
