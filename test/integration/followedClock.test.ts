import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createFollowedClock } from '../../src/followedClock.ts';

/** A stand-in for the sandbox's GET /_sandbox/clock, answering a time the test moves. */
let remote = Date.parse('2030-01-01T00:00:00Z');
let answer: 'ok' | 'broken' = 'ok';
const server = createServer((_req, res) => {
  if (answer === 'broken') {
    res.writeHead(503).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ now: new Date(remote).toISOString() }));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
afterAll(() => new Promise<void>((r) => server.close(() => r())));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/_sandbox/clock`;

describe('followed clock (CLOCK_URL)', () => {
  it('behavior: reads the remote time at start and follows it when it jumps', async () => {
    const clock = createFollowedClock(url, { intervalMs: 50 });
    await clock.start();
    try {
      expect(Math.abs(clock.now().getTime() - remote)).toBeLessThan(1_000);
      remote += 14 * 86_400_000;
      await new Promise((r) => setTimeout(r, 200));
      expect(Math.abs(clock.now().getTime() - remote)).toBeLessThan(1_000);
    } finally {
      clock.stop();
    }
  });

  it('error: an unreachable clock fails the start; a later failure keeps the last offset', async () => {
    answer = 'broken';
    await expect(createFollowedClock(url).start()).rejects.toThrow(/HTTP 503/);
    answer = 'ok';
    const errors: Error[] = [];
    const clock = createFollowedClock(url, { intervalMs: 50, onError: (e) => errors.push(e) });
    await clock.start();
    try {
      answer = 'broken';
      await new Promise((r) => setTimeout(r, 200));
      expect(errors.length).toBeGreaterThan(0);
      expect(Math.abs(clock.now().getTime() - remote)).toBeLessThan(1_000);
    } finally {
      clock.stop();
      answer = 'ok';
    }
  });
});
