import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import Fastify from 'fastify';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { ADMIN_SESSION_SECONDS, registerAdminQueues } from '../../../src/daemon/adminQueues.ts';

/**
 * The queue dashboard's guard on a real BullMQ queue (test Redis): read-only unless ADMIN_WRITE,
 * and a session cookie that stops working when it expires (the server checks, not only the
 * browser).
 */
const token = 'admin-token-0123456789-abcdef';
const bearer = { authorization: `Bearer ${token}` };
const queue = new Queue('alerts', {
  connection: { url: inject('redisUrl') },
  prefix: `sbadmin-${randomBytes(4).toString('hex')}`,
});
afterAll(() => queue.obliterate({ force: true }).finally(() => queue.close()));

async function dashboard(write: boolean, now: () => number) {
  const app = Fastify();
  await registerAdminQueues(app, { token, write, queues: [queue], now });
  return app;
}

describe('admin dashboard guard', () => {
  it('behavior: without ADMIN_WRITE a change (pause a queue) is 403 and the queue is untouched', async () => {
    const app = await dashboard(false, Date.now);
    const list = await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: bearer });
    expect(list.statusCode).toBe(200);
    const pause = await app.inject({
      method: 'PUT',
      url: '/admin/queues/api/queues/alerts/pause',
      headers: { ...bearer, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(pause.statusCode).toBe(403);
    expect(pause.json().reason).toMatch(/read-only; set ADMIN_WRITE=true/);
    expect(await queue.isPaused()).toBe(false);
    // The UI is told too, so it hides its buttons.
    expect(JSON.stringify(list.json())).toMatch(/"readOnlyMode":true/);
    await app.close();
  });

  it('behavior: with ADMIN_WRITE the same request pauses the queue', async () => {
    const app = await dashboard(true, Date.now);
    const pause = await app.inject({
      method: 'PUT',
      url: '/admin/queues/api/queues/alerts/pause',
      headers: { ...bearer, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(pause.statusCode).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    await queue.resume();
    await app.close();
  });

  it('behavior: the session cookie works until it expires, then is 401', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const app = await dashboard(false, () => now);
    const login = await app.inject({ method: 'GET', url: `/admin/queues?token=${token}` });
    expect(login.statusCode).toBe(303);
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const api = () => app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie } });
    expect((await api()).statusCode).toBe(200);
    now += ADMIN_SESSION_SECONDS * 1000 - 1000;
    expect((await api()).statusCode).toBe(200);
    now += 2000;
    expect((await api()).statusCode).toBe(401);
    // A cookie whose expiry was moved forward by hand no longer matches its signature.
    const [name, value] = cookie.split('=') as [string, string];
    const forged = `${name}=${Number(value.split('.')[0]) + 3_600_000}.${value.split('.')[1]}`;
    expect(
      (await app.inject({ method: 'GET', url: '/admin/queues/api/queues', headers: { cookie: forged } }))
        .statusCode,
    ).toBe(401);
    await app.close();
  });
});
