import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  createInboxWriter,
  type InboxItem,
  type InboxWriterOptions,
} from '../../../src/intake/inboxWriter.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

const { db } = await createMigratedDatabase('inbox_writer');

function item(patch: Partial<InboxItem> = {}): InboxItem {
  return {
    storeId: 'st_a',
    endpoint: 'checkout',
    webhookId: `wh_${randomUUID()}`,
    nonceKey: `st_a:${randomUUID()}`,
    nonceTtlSeconds: 600,
    headersJson: JSON.stringify({ 'x-webhook-id': 'whatever', 'content-type': 'application/json' }),
    body: Buffer.from('{"event":"paid"}'),
    json: true,
    ...patch,
  };
}

/** A writer with its batches, enqueue calls and log lines recorded. */
function harness(options: Partial<InboxWriterOptions> = {}) {
  const batches: number[] = [];
  const reports: Array<{ storeSeconds: number; enqueueSeconds: number | null }> = [];
  const enqueued: string[][] = [];
  const { logger, lines: logLines } = captureLogger();
  const writer = createInboxWriter({
    db,
    logger,
    enqueueMany: async (ids) => {
      enqueued.push([...ids]);
    },
    onBatch: ({ size, ...times }) => {
      batches.push(size);
      reports.push(times);
    },
    ...options,
  });
  return { writer, batches, reports, enqueued, logLines };
}

type InboxRow = {
  webhook_id: string;
  store_id: string;
  endpoint: string;
  status: string;
  headers: unknown;
  body: Buffer;
  error: string | null;
};

async function inboxRow(webhookId: string): Promise<InboxRow | undefined> {
  const { rows } = await db.execute<InboxRow>(sql`
    select webhook_id, store_id, endpoint, status, headers, body, error
    from webhook_inbox where webhook_id = ${webhookId}`);
  return rows[0];
}

async function nonceExists(nonce: string): Promise<boolean> {
  const { rows } = await db.execute<{ n: number }>(
    sql`select count(*)::int as n from webhook_nonces where nonce = ${nonce}`,
  );
  return rows[0]?.n === 1;
}

describe('inbox writer: group commit', () => {
  it('stores the webhooks of one turn with fewer statements than webhooks, in batches of at most maxBatch', async () => {
    const { writer, batches, enqueued } = harness({ maxBatch: 20 });
    const items = Array.from({ length: 50 }, () => item());
    const outcomes = await Promise.all(items.map((i) => writer.store(i)));
    expect(outcomes).toEqual(items.map(() => 'stored'));
    // Reported as each batch finishes, so in any order.
    expect([...batches].sort((a, b) => a - b)).toEqual([10, 20, 20]);
    // One enqueue per batch, with exactly that batch's webhooks (batches commit in any order).
    expect(enqueued.map((ids) => ids.length).sort((a, b) => a - b)).toEqual([10, 20, 20]);
    expect(enqueued.flat().sort()).toEqual(items.map((i) => i.webhookId).sort());
    for (const i of items) {
      const row = await inboxRow(i.webhookId);
      expect(row).toMatchObject({ store_id: 'st_a', endpoint: 'checkout', status: 'received', error: null });
      expect(row?.headers).toEqual(JSON.parse(i.headersJson));
      expect(await nonceExists(i.nonceKey)).toBe(true);
    }
  });

  it('reports each batch with the time of its statement, and of its enqueue when it had one', async () => {
    const { writer, reports } = harness();
    await Promise.all([writer.store(item()), writer.store(item())]);
    await writer.store(item({ body: Buffer.from('not json {'), json: false }));
    expect(reports).toHaveLength(2);
    expect(reports[0]?.storeSeconds).toBeGreaterThan(0);
    expect(reports[0]?.enqueueSeconds).toBeGreaterThanOrEqual(0);
    // A batch that stored only a rejected webhook enqueued nothing.
    expect(reports[1]?.storeSeconds).toBeGreaterThan(0);
    expect(reports[1]?.enqueueSeconds).toBeNull();
  });

  it('queues the webhooks arriving while maxInFlight batches run into the next batch', async () => {
    const { writer, batches } = harness({ maxInFlight: 1 });
    const first = Array.from({ length: 10 }, () => writer.store(item()));
    // Let the first batch start (the batcher's setImmediate was queued before this one), then add
    // more while it is in flight: they must wait and form the second batch, not join the first.
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([]);
    const second = Array.from({ length: 7 }, () => writer.store(item()));
    const outcomes = await Promise.all([...first, ...second]);
    expect(outcomes.every((o) => o === 'stored')).toBe(true);
    expect(batches).toEqual([10, 7]);
  });

  it('answers each outcome: stored, stored as rejected, duplicate, nonce_reused, expired nonce reclaimed', async () => {
    const { writer, enqueued } = harness();
    const good = item();
    const notJson = item({ body: Buffer.from('not json {'), json: false });
    expect(await Promise.all([writer.store(good), writer.store(notJson)])).toEqual(['stored', 'stored']);
    expect(enqueued).toEqual([[good.webhookId]]);
    expect(await inboxRow(notJson.webhookId)).toMatchObject({
      status: 'rejected',
      error: 'body is not valid JSON',
    });

    // The sender's retry: same webhook_id, new nonce.
    const retry = item({ webhookId: good.webhookId });
    // A replay: same nonce (whatever the webhook_id).
    const replay = item({ nonceKey: good.nonceKey });
    expect(await Promise.all([writer.store(retry), writer.store(replay)])).toEqual([
      'duplicate',
      'nonce_reused',
    ]);
    expect(await nonceExists(retry.nonceKey)).toBe(true);
    expect(await inboxRow(replay.webhookId)).toBeUndefined();
    expect(enqueued).toHaveLength(1);

    // A nonce whose claim has expired may be claimed again.
    const expired = `st_a:${randomUUID()}`;
    await db.execute(
      sql`insert into webhook_nonces (nonce, expires_at) values (${expired}, now() - interval '1 minute')`,
    );
    const late = item({ nonceKey: expired });
    expect(await writer.store(late)).toBe('stored');
    const { rows } = await db.execute<{ live: boolean }>(
      sql`select expires_at > now() as live from webhook_nonces where nonce = ${expired}`,
    );
    expect(rows[0]?.live).toBe(true);
  });

  it('answers nonce_reused for the later items of one batch with the same nonce, without sending them', async () => {
    const { writer, batches } = harness();
    const a = item();
    const b = item({ nonceKey: a.nonceKey });
    const c = item({ nonceKey: a.nonceKey });
    expect(await Promise.all([writer.store(a), writer.store(b), writer.store(c)])).toEqual([
      'stored',
      'nonce_reused',
      'nonce_reused',
    ]);
    expect(batches).toEqual([1]);
    expect(await inboxRow(a.webhookId)).toBeDefined();
    expect(await inboxRow(b.webhookId)).toBeUndefined();
    expect(await inboxRow(c.webhookId)).toBeUndefined();
  });

  it('stores the first of several items of one batch with one webhook_id and claims every nonce', async () => {
    const { writer, batches, enqueued } = harness();
    const webhookId = `wh_${randomUUID()}`;
    const items = [
      item({ webhookId, body: Buffer.from('{"n":1}') }),
      item({ webhookId, body: Buffer.from('{"n":2}') }),
      item({ webhookId, body: Buffer.from('{"n":3}') }),
    ];
    expect(await Promise.all(items.map((i) => writer.store(i)))).toEqual([
      'stored',
      'duplicate',
      'duplicate',
    ]);
    expect(batches).toEqual([3]);
    expect(enqueued).toEqual([[webhookId]]);
    expect((await inboxRow(webhookId))?.body.toString()).toBe('{"n":1}');
    for (const i of items) expect(await nonceExists(i.nonceKey)).toBe(true);
  });

  it('answers duplicate for a claimed nonce whose webhook_id is already stored, and does not enqueue it', async () => {
    const { writer, enqueued } = harness();
    const first = item();
    expect(await writer.store(first)).toBe('stored');
    const again = item({ webhookId: first.webhookId, body: Buffer.from('{"other":true}') });
    const fresh = item();
    expect(await Promise.all([writer.store(again), writer.store(fresh)])).toEqual(['duplicate', 'stored']);
    expect(await nonceExists(again.nonceKey)).toBe(true);
    expect((await inboxRow(first.webhookId))?.body.toString()).toBe('{"event":"paid"}');
    expect(enqueued).toEqual([[first.webhookId], [fresh.webhookId]]);
  });

  it('round-trips bodies and headers byte for byte through the array parameters', async () => {
    const { writer, batches } = harness();
    const allBytes = Buffer.from(Array.from({ length: 256 }, (_, b) => b));
    const bodies = [
      allBytes,
      Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x5c, 0x22, 0x2c, 0x7b, 0x7d]), // not UTF-8; \ " , { }
      Buffer.alloc(0),
      Buffer.from('{"memo":"quote \\" backslash \\\\ comma , braces {} NULL é 💸"}'),
      Buffer.from('NULL'),
    ];
    const headers = [
      { 'x-a': 'plain' },
      { 'x-b': 'quote " backslash \\ comma , braces {} é 💸' },
      { 'x-c': 'NULL' },
      { 'x-d': '' },
      { 'x-e': ['one', 'two'] },
    ];
    const items = bodies.map((body, n) =>
      item({ body, headersJson: JSON.stringify(headers[n]), json: n === 3 }),
    );
    expect(await Promise.all(items.map((i) => writer.store(i)))).toEqual(items.map(() => 'stored'));
    expect(batches).toEqual([items.length]);
    for (const [n, i] of items.entries()) {
      const row = await inboxRow(i.webhookId);
      expect(Buffer.isBuffer(row?.body)).toBe(true);
      expect(row?.body.equals(bodies[n] as Buffer)).toBe(true);
      expect(row?.headers).toEqual(headers[n]);
      expect(row?.status).toBe(n === 3 ? 'received' : 'rejected');
    }
  });

  it('fails only the item the database refuses, retrying the others one by one', async () => {
    const { writer, batches, enqueued, logLines } = harness();
    const before = item();
    // jsonb refuses the \u0000 escape; the signature header must not leak into the error.
    const poison = item({
      headersJson: JSON.stringify({ 'x-webhook-signature': 'sig-must-not-leak', 'x-bad': '\u0000' }),
    });
    const after = item({ body: Buffer.from('still not json'), json: false });
    const results = await Promise.allSettled([
      writer.store(before),
      writer.store(poison),
      writer.store(after),
    ]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: 'stored' });
    expect(results[2]).toEqual({ status: 'fulfilled', value: 'stored' });
    const failure = results[1];
    expect(failure?.status).toBe('rejected');
    const reason = failure?.status === 'rejected' ? String(failure.reason) : '';
    expect(reason).toMatch(/could not store webhook: .*\(22P05\)/);
    expect(reason).not.toContain('sig-must-not-leak');
    expect(reason).not.toContain('params');
    expect(batches).toEqual([3]);
    expect(enqueued).toEqual([[before.webhookId]]);
    expect(await inboxRow(poison.webhookId)).toBeUndefined();
    // Nothing of the refused item committed: its nonce is still free.
    expect(await nonceExists(poison.nonceKey)).toBe(false);
    expect(await inboxRow(after.webhookId)).toMatchObject({ status: 'rejected' });
    expect(logLines.some((l) => l.includes('inbox batch refused'))).toBe(true);
    expect(logLines.join('')).not.toContain('sig-must-not-leak');

    // Alone, it fails without a retry and the writer keeps working.
    await expect(writer.store(poison)).rejects.toThrow(/could not store webhook/);
    expect(batches).toEqual([3, 1]);
    expect(await writer.store(item())).toBe('stored');
  });

  it('resolves stored and logs a warning without the nonces when enqueueMany throws', async () => {
    const { writer, logLines } = harness({
      enqueueMany: async () => {
        throw new Error("Stream isn't writeable and enableOfflineQueue options is false");
      },
    });
    const items = [item(), item(), item({ body: Buffer.from('nope'), json: false })];
    expect(await Promise.all(items.map((i) => writer.store(i)))).toEqual(['stored', 'stored', 'stored']);
    for (const i of items) expect(await inboxRow(i.webhookId)).toBeDefined();
    const warning = logLines.find((l) => l.includes('not enqueued'));
    expect(warning).toBeDefined();
    expect(JSON.parse(warning ?? '{}')).toMatchObject({ count: 2 });
    for (const i of items) expect(logLines.join('')).not.toContain(i.nonceKey);
  });

  it('settles every accepted item before close resolves, and refuses items after', async () => {
    const { writer } = harness({ maxBatch: 3, maxInFlight: 1 });
    const pending = Array.from({ length: 10 }, () => writer.store(item()));
    let settled = 0;
    for (const p of pending) void p.then(() => settled++);
    await writer.close();
    expect(settled).toBe(10);
    expect(await Promise.all(pending)).toEqual(pending.map(() => 'stored'));
    await expect(writer.store(item())).rejects.toThrow(/closed/);
  });
});
