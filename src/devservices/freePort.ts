import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

/**
 * Below Linux's ephemeral range (32768-60999 by default). A port the kernel hands out for
 * listen(0) comes from that range, and so does the local port of every outgoing connection: a port
 * found that way and bound a few seconds later can meanwhile be taken by some client's connection
 * (CI failed on exactly that, EADDRINUSE). Ports in this range are only ever taken by a listener.
 */
const LOW = 20_000;
const HIGH = 32_000;

/** Finds a TCP port on loopback that nobody listens on, outside the ephemeral range. The caller binds it right away. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = randomInt(LOW, HIGH);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port found between ${LOW} and ${HIGH} after 50 tries`);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
