import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/startDaemon.ts';
import { signWebhook } from '../../src/svc/signing/webhookSignature.ts';
import { captureLogger } from '../helpers/captureLogger.ts';
import { createMigratedDatabase } from '../helpers/testDatabase.ts';

/**
 * Both HTTP ports against slow and many clients, on daemons started as `stablebooks start` starts
 * them (configured through the environment, real PostgreSQL and Redis): a request whose headers or
 * body never finish, and an idle keep-alive connection, are closed within their configured
 * timeouts; past HTTP_MAX_CONNECTIONS the oldest connections are shed, so a flood of stalled
 * bodies cannot shut the payments service's webhooks out.
 */
const database = await createMigratedDatabase('http_limits');
const dir = mkdtempSync(join(tmpdir(), 'sb-http-limits-'));
const API_KEY = 'pk_http_limits';
const SECRET = 'sk_http_limits_0123456789abcdef';
writeFileSync(
  join(dir, 'stores.json'),
  JSON.stringify([
    { store_id: 'st_a', business_id: 'biz_1', api_key: API_KEY, api_secret_env: 'SVC_SECRET_ST_A' },
  ]),
);
const baseEnv = {
  DATABASE_URL: database.url,
  REDIS_URL: inject('redisUrl'),
  // The intake role never calls the service.
  SVC_BASE_URL: 'http://127.0.0.1:9',
  STORES_FILE: join(dir, 'stores.json'),
  SVC_SECRET_ST_A: SECRET,
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  QUEUE_PREFIX: `sbtest-${randomBytes(4).toString('hex')}`,
  REPORTS_DIR: join(dir, 'reports'),
};

const daemons: RunningDaemon[] = [];
afterAll(() => Promise.all(daemons.map((d) => d.stop())), 60_000);
async function daemon(env: Record<string, string>): Promise<RunningDaemon> {
  const { logger } = captureLogger({ level: 'warn' });
  const running = await startDaemon({
    config: loadConfig({ ...baseEnv, ...env }),
    roles: ['intake'],
    logger,
    port: 0,
    host: '127.0.0.1',
    opsPort: 0,
    drainTimeoutMs: 5_000,
  });
  daemons.push(running);
  return running;
}

const REQUEST_TIMEOUT_MS = 2_000;
const HEADERS_TIMEOUT_MS = 1_000;
const KEEP_ALIVE_TIMEOUT_MS = 1_000;
// The server looks for late requests once a second; a close may also take a moment to arrive.
const MARGIN_MS = 2_500;
const short = await daemon({
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
});

interface Held {
  socket: Socket;
  /** Milliseconds from the first byte written to the close; undefined while open. */
  closedAfter: number | undefined;
  received: string;
}

/** A raw connection to `url` that writes `bytes` and then nothing more. */
function hold(url: string, bytes: string): Promise<Held> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const held: Held = { socket, closedAfter: undefined, received: '' };
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      held.received += chunk.toString('latin1');
    });
    socket.once('connect', () => {
      const start = performance.now();
      socket.on('close', () => {
        held.closedAfter = performance.now() - start;
      });
      socket.write(bytes, () => resolve(held));
    });
    socket.once('error', reject);
  });
}

const stalledBody = (path: string) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`;
const stalledHeaders = (path: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: applic`;

/** Waits until `held` is closed or `ms` have passed; destroys it either way. */
async function closedWithin(held: Held, ms: number): Promise<number | undefined> {
  const end = performance.now() + ms;
  while (held.closedAfter === undefined && performance.now() < end)
    await new Promise((r) => setTimeout(r, 50));
  held.socket.destroy();
  return held.closedAfter;
}

function signedWebhook(): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ all_svc_checkout_intent_id: randomUUID(), status: 3 });
  const signed = signWebhook({
    secret: SECRET,
    method: 'POST',
    path: '/webhooks/checkout',
    webhookId: `wh_${randomUUID()}`,
    body,
    clock: systemClock,
  });
  return { body, headers: { ...signed, 'x-api-key': API_KEY, 'content-type': 'application/json' } };
}

describe('HTTP: slow clients are closed within the configured timeouts', () => {
  it('error: a body that never arrives is closed within HTTP_REQUEST_TIMEOUT_MS, on both ports', async () => {
    const held = await Promise.all([
      hold(short.url, stalledBody('/webhooks/checkout')),
      hold(short.opsUrl, stalledBody('/healthz')),
    ]);
    const closed = await Promise.all(held.map((h) => closedWithin(h, REQUEST_TIMEOUT_MS + MARGIN_MS)));
    for (const [i, ms] of closed.entries()) {
      expect(ms, `port ${i}: still open after ${REQUEST_TIMEOUT_MS + MARGIN_MS} ms`).toBeDefined();
      expect(held[i]!.received).toMatch(/^HTTP\/1\.1 408 /);
    }
  }, 20_000);

  it('error: headers that never finish are closed within HTTP_HEADERS_TIMEOUT_MS, on both ports', async () => {
    const held = await Promise.all([
      hold(short.url, stalledHeaders('/webhooks/checkout')),
      hold(short.opsUrl, stalledHeaders('/healthz')),
    ]);
    const closed = await Promise.all(held.map((h) => closedWithin(h, HEADERS_TIMEOUT_MS + MARGIN_MS)));
    for (const [i, ms] of closed.entries())
      expect(ms, `port ${i}: still open after ${HEADERS_TIMEOUT_MS + MARGIN_MS} ms`).toBeDefined();
  }, 20_000);

  it('behavior: an idle keep-alive connection is closed within HTTP_KEEP_ALIVE_TIMEOUT_MS, on both ports', async () => {
    const held = await Promise.all(
      [short.url, short.opsUrl].map((url) => hold(url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')),
    );
    const closed = await Promise.all(held.map((h) => closedWithin(h, KEEP_ALIVE_TIMEOUT_MS + MARGIN_MS)));
    for (const [i, ms] of closed.entries()) {
      expect(held[i]!.received).toMatch(/^HTTP\/1\.1 200 /);
      expect(ms, `port ${i}: still open after ${KEEP_ALIVE_TIMEOUT_MS + MARGIN_MS} ms`).toBeDefined();
    }
  }, 20_000);
});

describe('HTTP: many stalled clients', () => {
  it('behavior: past HTTP_MAX_CONNECTIONS the oldest connections are shed and a webhook is still stored', async () => {
    const MAX = 50;
    const STALLED = 300;
    // Timeouts at their defaults: only the cap can close these connections within the test.
    const capped = await daemon({ HTTP_MAX_CONNECTIONS: String(MAX) });
    const held: Held[] = [];
    for (let i = 0; i < STALLED; i++) held.push(await hold(capped.url, stalledBody('/webhooks/checkout')));

    const { body, headers } = signedWebhook();
    const res = await fetch(`${capped.url}/webhooks/checkout`, { method: 'POST', headers, body });
    expect(res.status, await res.text()).toBe(200);

    const end = performance.now() + 5_000;
    const open = () => held.filter((h) => h.closedAfter === undefined).length;
    while (open() > MAX && performance.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(open()).toBeLessThanOrEqual(MAX);
    // The newest stalled connections are the ones kept.
    expect(held.at(-1)!.closedAfter).toBeUndefined();
    expect(held[0]!.closedAfter).toBeDefined();
    for (const h of held) h.socket.destroy();
  }, 60_000);
});
