import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { elapsed, expectExactlyOnce, startProcessCluster, waitFor } from '../helpers/processCluster.ts';

/**
 * Outbound events across a worker crash (real `stablebooks start --role …` processes,
 * test/helpers/processCluster.ts): a receiver that answers each POST after 200 ms records every
 * delivery; the worker delivering them is killed (SIGKILL) while some are in flight, another worker
 * starts; every payment's payment.booked arrives at least once, none is lost, and a duplicate
 * carries the same event id and the same body. Every delivery's signature verifies.
 */
const { intakePort, payIntents, setup, kill } = await startProcessCluster();
const SECRET = 'e2e-events-secret-5f4e3d2c1b0a';

interface Delivery {
  id: string;
  type: string;
  body: string;
  signatureOk: boolean;
}
const deliveries: Delivery[] = [];
/** Requests received and not answered yet, with their event id. */
const waiting = new Map<ServerResponse, string>();
/** While set, answers wait (the worker is killed with these in flight). */
let hold = false;
const answer = (res: ServerResponse) => {
  if (hold || !waiting.has(res)) return;
  waiting.delete(res);
  res.statusCode = 200;
  res.end('ok');
};
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const timestamp = String(req.headers['x-stablebooks-timestamp']);
    const signature = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex')}`;
    deliveries.push({
      id: String(req.headers['x-stablebooks-event-id']),
      type: String(req.headers['x-stablebooks-event-type']),
      body,
      signatureOk: req.headers['x-stablebooks-signature'] === signature,
    });
    waiting.set(res, String(req.headers['x-stablebooks-event-id']));
    res.on('close', () => waiting.delete(res));
    setTimeout(() => answer(res), 200);
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
afterAll(() => new Promise<void>((r) => receiver.close(() => r())));
const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/stablebooks-events`;

describe('outbound events across a worker crash', () => {
  it('behavior: the worker killed (SIGKILL) with deliveries in flight: every payment.booked arrives at least once, duplicates identical', async () => {
    const t0 = performance.now();
    const s = await setup('events_sigkill', { eventsWebhook: { url, secret: SECRET } });
    const intake = await s.start('intake', 'intake', intakePort);
    const scheduler = await s.start('scheduler', 'scheduler');
    const worker1 = await s.start('worker-1', 'worker');

    const ids = await payIntents(40);
    // Some delivered, then answers are held: the worker has POSTs in flight when it dies.
    await waitFor('first deliveries', async () => deliveries.length >= 5, 120_000);
    hold = true;
    await waitFor('deliveries in flight', async () => waiting.size > 0, 30_000);
    expect(await kill(worker1, 'SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // In flight = sent and never marked delivered. Read from the outbox with no worker alive, not
    // from the receiver: a batch's POSTs arrive over several ms, and a 200 sent just before the hold
    // may not have been marked when the worker died; both are rightly sent again.
    const { rows: unmarked } = await s.db.execute<{ event_id: string }>(
      sql`select event_id from event_outbox where delivered_at is null`,
    );
    const sent = new Set(deliveries.map((d) => d.id));
    const inFlight = new Set(unmarked.map((r) => r.event_id).filter((id) => sent.has(id)));
    hold = false;
    for (const res of [...waiting.keys()]) answer(res);
    console.log(
      `events: worker killed with ${inFlight.size} deliveries in flight, ${deliveries.length} received`,
    );

    const worker2 = await s.start('worker-2', 'worker');
    const booked = (id: string) => `payment.booked:${id}`;
    await waitFor(
      'every payment.booked received',
      async () => ids.every((id) => deliveries.some((d) => d.id === booked(id))),
      180_000,
    );
    // The outbox drains: every event written is delivered (the in-flight ones once their lease ends).
    await waitFor(
      'the outbox delivered',
      async () => {
        const { rows } = await s.db.execute<{ n: number }>(
          sql`select count(*)::int as n from event_outbox where delivered_at is null`,
        );
        return rows[0]?.n === 0;
      },
      120_000,
    );

    const { rows: outbox } = await s.db.execute<{ event_id: string }>(sql`select event_id from event_outbox`);
    const received = new Set(deliveries.map((d) => d.id));
    expect(
      outbox.filter((r) => !received.has(r.event_id)),
      'events never received',
    ).toEqual([]);
    expect(
      ids.filter((id) => !received.has(booked(id))),
      'payments without payment.booked',
    ).toEqual([]);
    expect(
      deliveries.filter((d) => !d.signatureOk),
      'deliveries whose signature does not verify',
    ).toEqual([]);
    // Each event id always with the same body (and type); received more than once only after the crash.
    const byId = new Map<string, Delivery[]>();
    for (const d of deliveries) byId.set(d.id, [...(byId.get(d.id) ?? []), d]);
    for (const [id, copies] of byId) {
      expect(new Set(copies.map((c) => c.body)).size, id).toBe(1);
      expect(new Set(copies.map((c) => c.type)).size, id).toBe(1);
      expect(JSON.parse(copies[0]!.body)).toMatchObject({ id, type: copies[0]!.type });
    }
    const duplicated = [...byId].filter(([, copies]) => copies.length > 1).map(([id]) => id);
    // What was in flight at the kill was never marked: sent again, same id and body.
    expect(duplicated.filter((id) => inFlight.has(id)).length).toBeGreaterThan(0);
    expect(
      duplicated.filter((id) => !inFlight.has(id)),
      'duplicates of events not in flight',
    ).toEqual([]);
    // One payment.booked per intent, with the intent's own facts.
    for (const id of ids) {
      const body = JSON.parse(byId.get(booked(id))![0]!.body) as {
        data: { intent_id: string; store_id: string };
      };
      expect(body.data).toMatchObject({ intent_id: id, store_id: 'st_a' });
    }
    await expectExactlyOnce(s.db, ids);

    // The events secret is in no process's log.
    for (const proc of [intake, scheduler, worker1, worker2])
      expect(readFileSync(proc.logFile, 'utf8'), proc.label).not.toContain(SECRET);
    console.log(
      `events: ${deliveries.length} deliveries of ${byId.size} events, ${duplicated.length} sent twice; case ${elapsed(t0)}`,
    );
    for (const p of [intake, scheduler, worker2]) await kill(p, 'SIGTERM');
  }, 420_000);
});
