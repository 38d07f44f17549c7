import { afterAll, describe, expect, it } from 'vitest';
import { ALL_ROLES } from '../../src/daemon/roles.ts';
import { startDaemon } from '../../src/daemon/startDaemon.ts';
import { captureLogger } from '../helpers/captureLogger.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The queue dashboard (bull-board) at /admin/queues on the daemon's port, through a daemon
 * in-process on real PostgreSQL and Redis: behind ADMIN_TOKEN (bearer or a cookie set by
 * `?token=`), listing every queue of the daemon with its counts, and absent when the token is unset.
 */
const pipeline = await startPipeline();
// The harness's config has no admin token: that daemon has no dashboard.
const plain = await pipeline.startDaemon(['intake']);

const token = 'admin-token-0123456789-abcdef';
// No secrets given to the logger: a token in a line would show up unscrubbed here.
const { logger, lines: logs } = captureLogger({ level: 'debug' });
const admin = await startDaemon({
  config: { ...pipeline.config, adminToken: token, adminWrite: true },
  roles: ALL_ROLES,
  logger,
  port: 0,
  host: '127.0.0.1',
  drainTimeoutMs: 10_000,
  clock: pipeline.sandbox.world.clock,
});
afterAll(() => admin.stop(), 60_000);

const at = (path: string) => `${admin.opsUrl}${path}`;
const bearer = { authorization: `Bearer ${token}` };

describe('admin: the queue dashboard behind ADMIN_TOKEN', () => {
  it('behavior: without the token, or with a wrong one, every dashboard path is 401', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/x.js']) {
      const none = await fetch(at(path), { redirect: 'manual' });
      expect(none.status, path).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await fetch(at(path), {
        headers: { authorization: `Bearer ${token}x` },
        redirect: 'manual',
      });
      expect(wrong.status, path).toBe(401);
    }
    const shortToken = await fetch(at('/admin/queues'), { headers: { authorization: 'Bearer admin' } });
    expect(shortToken.status).toBe(401);
    const wrongQuery = await fetch(at('/admin/queues?token=nope'), { redirect: 'manual' });
    expect(wrongQuery.status).toBe(401);
    expect(wrongQuery.headers.get('set-cookie')).toBeNull();
    const forgedCookie = await fetch(at('/admin/queues/api/queues'), {
      headers: { cookie: `stablebooks_admin=${token}` },
    });
    expect(forgedCookie.status).toBe(401);
  });

  it('behavior: with the bearer token the dashboard is 200 HTML', async () => {
    const res = await fetch(at('/admin/queues'), { headers: bearer });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('/admin/queues');
    expect(html).not.toContain(token);
  });

  it('behavior: ?token= sets an HttpOnly cookie that lets the UI fetch its assets and API', async () => {
    const res = await fetch(at(`/admin/queues?token=${token}`), { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/admin/queues');
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\/admin\/queues/);
    expect(setCookie).toMatch(/Max-Age=28800/);
    expect(setCookie).not.toContain(token);
    const cookie = setCookie.split(';')[0]!;

    const page = await fetch(at('/admin/queues'), { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    // The UI's own assets load with the cookie alone.
    // Asset paths are relative to <base href="/admin/queues/">.
    expect(html).toContain('<base href="/admin/queues/"');
    const assets = [...html.matchAll(/(?:src|href)="(static\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
    expect(assets.length, html).toBeGreaterThan(0);
    for (const asset of assets) {
      const res = await fetch(at(`/admin/queues/${asset}`), { headers: { cookie } });
      expect(res.status, asset).toBe(200);
      expect((await fetch(at(`/admin/queues/${asset}`))).status, asset).toBe(401);
    }
    const api = await fetch(at('/admin/queues/api/queues'), { headers: { cookie } });
    expect(api.status).toBe(200);
  });

  it('behavior: the cookie is Secure when a proxy says the browser came over https, and not over plain http', async () => {
    const login = (headers: Record<string, string> = {}, url = at(`/admin/queues?token=${token}`)) =>
      fetch(url, { headers, redirect: 'manual' }).then((res) => {
        expect(res.status).toBe(303);
        return res.headers.get('set-cookie') ?? '';
      });
    // Plain http to the port itself (a browser on the operator's network): a Secure cookie would
    // be dropped by the browser and the dashboard could not load its own API.
    expect(await login()).not.toMatch(/;\s*Secure/i);
    // Behind a TLS-terminating proxy, which says so in either header.
    expect(await login({ 'x-forwarded-proto': 'https' })).toMatch(/; Secure$/);
    expect(await login({ 'x-forwarded-proto': 'https, http' })).toMatch(/; Secure$/);
    expect(await login({ forwarded: 'for=192.0.2.60;proto=https;by=203.0.113.43' })).toMatch(/; Secure$/);
    expect(await login({ 'x-forwarded-proto': 'http' })).not.toMatch(/;\s*Secure/i);
    // ADMIN_COOKIE_SECURE=always: whatever the request says.
    const always = await pipeline.startDaemon(['intake'], {
      port: 0,
      config: { adminToken: token, adminCookieSecure: 'always' },
    });
    expect(await login({}, `${always.opsUrl}/admin/queues?token=${token}`)).toMatch(/; Secure$/);
  });

  it('behavior: the API lists every queue of the daemon with its counts', async () => {
    const names = [
      'webhooks',
      'maintenance',
      'chain',
      'claim-links',
      'alerts',
      'recon',
      'events',
      'polls-st_a',
    ];
    // The scheduler role has put the sweepers' next runs on their queues.
    const body = await pipeline.waitFor(async () => {
      const res = await fetch(at('/admin/queues/api/queues'), { headers: bearer });
      expect(res.status).toBe(200);
      const json = (await res.json()) as {
        queues: { name: string; counts: Record<string, number> }[];
      };
      const maintenance = json.queues.find((q) => q.name === 'maintenance');
      const scheduled = Object.values(maintenance?.counts ?? {}).reduce((a, b) => a + b, 0);
      return scheduled > 0 && json;
    });
    expect(body.queues.map((q) => q.name).sort()).toEqual([...names].sort());
    for (const q of body.queues) {
      for (const state of ['active', 'completed', 'delayed', 'failed', 'waiting'])
        expect(typeof q.counts[state], `${q.name} ${state}`).toBe('number');
    }
  });

  it('behavior: the write API takes JSON bodies (pause and resume a queue)', async () => {
    const json = { ...bearer, 'content-type': 'application/json' };
    const isPaused = async () => {
      const res = await fetch(at('/admin/queues/api/queues'), { headers: bearer });
      const body = (await res.json()) as { queues: { name: string; isPaused: boolean }[] };
      return body.queues.find((q) => q.name === 'alerts')?.isPaused;
    };
    const unauth = await fetch(at('/admin/queues/api/queues/alerts/pause'), { method: 'PUT', body: '{}' });
    expect(unauth.status).toBe(401);
    expect(await isPaused()).toBe(false);
    const pause = await fetch(at('/admin/queues/api/queues/alerts/pause'), {
      method: 'PUT',
      headers: json,
      body: '{}',
    });
    expect(pause.status, await pause.text()).toBe(200);
    expect(await isPaused()).toBe(true);
    const resume = await fetch(at('/admin/queues/api/queues/alerts/resume'), {
      method: 'PUT',
      headers: json,
    });
    expect(resume.status, await resume.text()).toBe(200);
    expect(await isPaused()).toBe(false);
    const bad = await fetch(at('/admin/queues/api/queues/alerts/resume'), {
      method: 'PUT',
      headers: json,
      body: '{',
    });
    expect(bad.status).toBe(400);
  });

  it('behavior: unknown paths under the dashboard need the token too', async () => {
    expect((await fetch(at('/admin/queues/nope/nope'))).status).toBe(401);
    expect((await fetch(at('/admin/queues/nope/nope'), { headers: bearer })).status).toBe(404);
  });

  it('behavior: without ADMIN_TOKEN the dashboard routes do not exist', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      expect((await fetch(`${plain.opsUrl}${path}`)).status, path).toBe(404);
      expect((await fetch(`${plain.opsUrl}${path}`, { headers: bearer })).status, path).toBe(404);
    }
    expect((await fetch(`${plain.opsUrl}/healthz`)).status).toBe(200);
  });

  it('behavior: the public port serves webhooks and /healthz only; the operations port no webhooks', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/metrics', '/readyz']) {
      const res = await fetch(`${admin.url}${path}`, { headers: bearer });
      expect(res.status, `public ${path}`).toBe(404);
    }
    expect((await fetch(`${admin.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${admin.opsUrl}/metrics`)).status).toBe(200);
    expect((await fetch(`${admin.opsUrl}/readyz`)).status).toBe(200);
    const webhook = await fetch(`${admin.opsUrl}/webhooks/checkout`, { method: 'POST', body: '{}' });
    expect(webhook.status).toBe(404);
  });

  it('invariant: the token is never logged', () => {
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('')).not.toContain(token);
  });
});
