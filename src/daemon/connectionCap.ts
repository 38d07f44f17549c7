import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Keeps at most `max` connections open on `server`: a connection past the cap closes the oldest
 * one. Refusing the newcomer instead (what net.Server's maxConnections does) would let anyone who
 * holds `max` slow connections shut everyone else out, the payments service's webhooks first. An
 * honest request on these ports takes milliseconds, so the oldest connection is the likeliest to
 * be a stalled one; an honest one cut off this way (a webhook, a scrape) is retried by its sender,
 * and the request and idle timeouts close stalled connections anyway, the cap only bounds how
 * many file descriptors they hold meanwhile.
 */
export function capConnections(server: Server, max: number): void {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    // A Set iterates in insertion order: its first socket is the oldest still open.
    for (const oldest of open) {
      if (open.size <= max) break;
      open.delete(oldest);
      oldest.destroy();
    }
  });
}
