/**
 * Edges of the protocol the spec leaves loose: a numeric retry_after, a 50108 without a reason,
 * and a redirect, which must never carry signed headers elsewhere.
 */
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createSvcClient } from '../../../src/svc/client.ts';
import { SvcApiError, SvcKeyPausedError, SvcTransportError } from '../../../src/svc/errors.ts';
import {
  API_KEY,
  API_SECRET,
  apiError,
  CLAIM_LINK_ID,
  makeClient,
  ok,
  recordingSleep,
  startFakeService,
  stopFakeServices,
} from './fakeService.ts';

afterEach(stopFakeServices);

describe('client edges', () => {
  it('retry: a retry_after sent as a JSON number of seconds is honoured', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: 2 }), ok({ pong: 'ok' }));
    const { delays, sleep } = recordingSleep();
    await expect(makeClient(service, { sleep }).ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(delays).toEqual([2000]);
  });

  it('retry: a 40001 pauses the key for its retry_after; during the pause nothing is sent', async () => {
    const service = await startFakeService();
    service.script(apiError(40001, 429, { retry_after: '3s' }), ok({ pong: 'ok' }), ok({ pong: 'ok' }));
    let pausedUntil = 0;
    let now = 1_000;
    const starts: number[] = [];
    const keyPause = {
      remainingMs: async () => Math.max(0, pausedUntil - now),
      start: async (ms: number) => {
        starts.push(ms);
        pausedUntil = now + ms;
      },
    };
    // The daemon's settings: a 40001 is not waited for inside the client.
    const client = makeClient(service, { retry: { maxAttempts: 3, maxRetryAfterMs: 0 }, keyPause });
    const refused = await client.ping().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(SvcApiError);
    expect(starts).toEqual([3000]);
    now += 1_000;
    const paused = await client.ping().catch((err: unknown) => err);
    expect(paused).toBeInstanceOf(SvcKeyPausedError);
    expect(paused).toMatchObject({ retryAfterMs: 2000, retryable: true });
    expect(service.requests).toHaveLength(1);
    now += 2_000;
    await expect(client.ping()).resolves.toMatchObject({ pong: 'ok' });
    expect(service.requests).toHaveLength(2);
    // A pause that cannot be read (Redis down) does not stop the request.
    const unreadable = makeClient(service, {
      keyPause: { remainingMs: () => Promise.reject(new Error('redis down')), start: async () => {} },
    });
    await expect(unreadable.ping()).resolves.toMatchObject({ pong: 'ok' });
  });

  it('cancel: 50108 "cancelled" without a reason is still already cancelled', async () => {
    const service = await startFakeService();
    service.script(apiError(50108, 409, { status: 'cancelled' }));
    await expect(makeClient(service).cancelClaimLinkAutoPayout(CLAIM_LINK_ID)).resolves.toMatchObject({
      already_cancelled: true,
    });
  });

  it('error: a redirect is not followed, so signed headers never reach another address', async () => {
    let elsewhere = 0;
    const target = createServer((_req, res) => {
      elsewhere++;
      res.end('{}');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    const targetPort = (target.address() as { port: number }).port;
    const redirector = createServer((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${targetPort}/v1/test/ping` });
      res.end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', r));
    const port = (redirector.address() as { port: number }).port;
    try {
      const client = createSvcClient({
        baseUrl: `http://127.0.0.1:${port}`,
        credentials: { apiKey: API_KEY, apiSecret: API_SECRET, signedResponse: false },
        retry: { maxAttempts: 1 },
      });
      await expect(client.ping()).rejects.toBeInstanceOf(SvcTransportError);
      expect(elsewhere).toBe(0);
    } finally {
      await new Promise<void>((r) => redirector.close(() => r()));
      await new Promise<void>((r) => target.close(() => r()));
    }
  });
});
