import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../../src/devservices/freePort.ts';

describe('freePort', () => {
  it('gives bindable ports below the kernel ephemeral range, so no outgoing connection can take one before it is bound', async () => {
    const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    for (let i = 0; i < 20; i++) {
      const port = await freePort();
      expect(port).toBeLessThan(ephemeralLow!);
      await new Promise<void>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
      });
    }
  });
});
