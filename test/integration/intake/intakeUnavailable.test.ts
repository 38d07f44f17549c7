import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.ts';
import { createDatabase } from '../../../src/db/database.ts';
import { freePort } from '../../../src/devservices/freePort.ts';
import { createInboxWriter } from '../../../src/intake/inboxWriter.ts';
import { registerIntakeRoutes } from '../../../src/intake/intakeRoutes.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { signWebhook } from '../../../src/svc/signing/webhookSignature.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * The intake when it cannot store: it answers 503 with Retry-After (never 500, never 200), counts
 * it by reason, and holds at most INTAKE_QUEUE_LIMIT webhooks in memory. Real PostgreSQL: one
 * case points the pool at a port nothing listens on, the other holds a lock on the inbox table so
 * stores wait.
 */
const database = await createMigratedDatabase('intake_unavailable');
const API_KEY = 'pk_test';
const SECRET = 'sk_test_0123456789abcdef';
const store = {
  storeId: 'st_a',
  businessId: 'biz_1',
  apiKey: API_KEY,
  apiSecret: SECRET,
  signedResponse: false,
  functionalCurrency: 'USD',
  par: new Map(),
  wallets: new Map(),
};

function intake(databaseUrl: string, queueLimit: number) {
  const metrics = createMetrics();
  const app: FastifyInstance = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  const db = createDatabase(databaseUrl, { connectionTimeoutMs: 1_000 });
  const inbox = createInboxWriter({
    db: db.db,
    logger: pino({ level: 'silent' }),
    enqueueMany: async () => {},
  });
  registerIntakeRoutes(app, {
    clock: systemClock,
    storesByKey: new Map([[API_KEY, store]]),
    metrics,
    inbox,
    queueLimit,
  });
  const close = async () => {
    await app.close();
    await inbox.close();
    await db.close();
  };
  return { app, metrics, close };
}

function post(app: FastifyInstance) {
  const body = JSON.stringify({ all_svc_checkout_intent_id: randomUUID(), status: 3 });
  const headers = signWebhook({
    secret: SECRET,
    method: 'POST',
    path: '/webhooks/checkout',
    webhookId: `wh_${randomUUID()}`,
    body,
    clock: systemClock,
  });
  return app.inject({
    method: 'POST',
    url: '/webhooks/checkout',
    headers: { ...headers, 'x-api-key': API_KEY, 'content-type': 'application/json' },
    payload: body,
  });
}

async function errors(metrics: ReturnType<typeof createMetrics>, reason: string): Promise<number> {
  const metric = await metrics.webhookIntakeErrors.get();
  return metric.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

describe('intake: PostgreSQL unavailable', () => {
  it('behavior: a webhook that cannot be stored is 503 with Retry-After and counted store_unavailable', async () => {
    const url = new URL(database.url);
    url.port = String(await freePort());
    const { app, metrics, close } = intake(url.toString(), 100);
    const res = await post(app);
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.json()).toMatchObject({ ok: false, reason: expect.stringMatching(/^store_unavailable: /) });
    expect(await errors(metrics, 'store_unavailable')).toBe(1);
    await close();
  });

  it('behavior: beyond INTAKE_QUEUE_LIMIT waiting webhooks the answer is 503 queue_full; the waiting ones are stored once the database answers', async () => {
    const { app, metrics, close } = intake(database.url, 3);
    // A transaction holding the inbox table: every store waits behind it.
    const locker = new pg.Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table webhook_inbox in access exclusive mode');
    const waiting = [post(app), post(app), post(app)];
    await new Promise((r) => setTimeout(r, 300));
    const refused = await Promise.all([post(app), post(app)]);
    for (const r of refused) {
      expect(r.statusCode).toBe(503);
      expect(r.headers['retry-after']).toBe('10');
      expect(r.json().reason).toMatch(/^queue_full: /);
    }
    expect(await errors(metrics, 'queue_full')).toBe(2);
    await locker.query('rollback');
    await locker.end();
    for (const r of await Promise.all(waiting)) expect(r.statusCode).toBe(200);
    const stored = await database.db.execute<{ n: number }>(
      sql`select count(*)::int as n from webhook_inbox`,
    );
    expect(stored.rows[0]!.n).toBe(3);
    await close();
  });
});
