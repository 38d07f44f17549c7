/**
 * Edges of the protocol the spec leaves loose: a numeric retry_after, a 50108 without a reason,
 * and a redirect, which must never carry signed headers elsewhere.
 */
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createSvcClient } from '../../../src/svc/client.ts';
import { SvcTransportError } from '../../../src/svc/errors.ts';
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
