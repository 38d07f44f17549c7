import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/clock.ts';
import {
  type DeliveryDeps,
  type DeliveryOutcome,
  deliverEvents,
  pruneEvents,
  retryDelayMs,
} from '../../../src/events/deliverEvents.ts';
import { recordEvent } from '../../../src/events/recordEvent.ts';
import { captureLogger } from '../../helpers/captureLogger.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';

/**
 * Delivery of the outbox to a real local HTTP receiver: signed like the alert webhook, marked
 * delivered on a 2xx, retried with exponential backoff otherwise, given up after the window, sent
 * again (same id, same body) once a claimer's lease ends without a mark.
 */
const { db } = await createMigratedDatabase('deliver_events');
const SECRET = 'events-secret-0123456789abcdef';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}
const received: Received[] = [];
let answer = 200;
let delayMs = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    setTimeout(() => {
      res.statusCode = answer;
      res.end(answer === 200 ? 'ok' : `no: ${SECRET}`);
    }, delayMs);
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
afterAll(() => new Promise<void>((r) => server.close(() => r())));
// A path token, as some receivers' URLs carry: never logged either.
const URL_TOKEN = 'tok_9f8e7d6c5b4a3210';
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/${URL_TOKEN}`;

const { logger, lines } = captureLogger({ secrets: [SECRET] });
const outcomes: DeliveryOutcome[] = [];
const deps = (policy: DeliveryDeps['policy'] = {}): DeliveryDeps => ({
  db,
  clock: systemClock,
  logger,
  url,
  secret: SECRET,
  policy: { baseDelayMs: 1_000, ...policy },
  onOutcome: (o) => outcomes.push(o),
});

let n = 0;
async function addEvent(): Promise<string> {
  n += 1;
  const id = `payment.booked:it${n}`;
  await db.transaction((tx) =>
    recordEvent(tx, {
      id,
      type: 'payment.booked',
      occurredAt: new Date(Date.UTC(2026, 10, 20, 12, 0, n)),
      data: { intent_id: `it${n}`, amount: '25.5', nested: { b: 1, a: [1, 2] } },
    }),
  );
  return id;
}

async function row(eventId: string) {
  const { rows } = await db.execute<{
    attempts: number;
    delivered: boolean;
    given_up: boolean;
    last_error: string | null;
    due_in_ms: number;
  }>(sql`
    select attempts, delivered_at is not null as delivered, given_up_at is not null as given_up, last_error,
           (extract(epoch from next_attempt_at - now()) * 1000)::float8 as due_in_ms
    from event_outbox where event_id = ${eventId}`);
  return rows[0]!;
}

beforeEach(async () => {
  await db.execute(sql`delete from event_outbox`);
  received.length = 0;
  outcomes.length = 0;
  answer = 200;
  delayMs = 0;
});

describe('deliverEvents', () => {
  it('behavior: POSTs each due event signed (HMAC over "<timestamp>.<body>"), with its id and type, and marks it delivered on 200', async () => {
    const id = await addEvent();
    expect(await deliverEvents(deps())).toEqual({ delivered: 1, failed: 0, givenUp: 0 });
    expect(received).toHaveLength(1);
    const [{ headers, body }] = received as [Received];
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-stablebooks-event-id']).toBe(id);
    expect(headers['x-stablebooks-event-type']).toBe('payment.booked');
    const timestamp = String(headers['x-stablebooks-timestamp']);
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
    // What a receiver does: recompute the HMAC over the raw body and compare.
    const expected = `sha256=${createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex')}`;
    expect(headers['x-stablebooks-signature']).toBe(expected);
    expect(JSON.parse(body)).toEqual({
      id,
      type: 'payment.booked',
      occurred_at: new Date(Date.UTC(2026, 10, 20, 12, 0, n)).toISOString(),
      data: { intent_id: `it${n}`, amount: '25.5', nested: { b: 1, a: [1, 2] } },
    });
    expect(await row(id)).toMatchObject({ attempts: 1, delivered: true, last_error: null });
    // Delivered once: a second run has nothing to send.
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 0, givenUp: 0 });
    expect(received).toHaveLength(1);
  });

  it('behavior: a 500 is retried with exponential backoff (base, then twice that), then delivered on 200 with the same body', async () => {
    const id = await addEvent();
    answer = 500;
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 1, givenUp: 0 });
    const first = await row(id);
    expect(first).toMatchObject({
      attempts: 1,
      delivered: false,
      last_error: expect.stringContaining('500'),
    });
    expect(first.due_in_ms).toBeGreaterThan(800);
    expect(first.due_in_ms).toBeLessThanOrEqual(1_000);
    // Not due yet: nothing is sent.
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 0, givenUp: 0 });
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 1, givenUp: 0 });
    const second = await row(id);
    expect(second.attempts).toBe(2);
    expect(second.due_in_ms).toBeGreaterThan(1_800);
    expect(second.due_in_ms).toBeLessThanOrEqual(2_000);
    await db.execute(sql`update event_outbox set next_attempt_at = now() where event_id = ${id}`);
    answer = 200;
    expect(await deliverEvents(deps())).toEqual({ delivered: 1, failed: 0, givenUp: 0 });
    expect(await row(id)).toMatchObject({ attempts: 3, delivered: true, last_error: null });
    expect(received).toHaveLength(3);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    expect(new Set(received.map((r) => r.headers['x-stablebooks-event-id'])).size).toBe(1);
    expect(outcomes).toEqual(['failed', 'failed', 'delivered']);
  });

  it('behavior: the backoff doubles from the base and stops at the cap (1 hour)', () => {
    expect([1, 2, 3, 4].map((a) => retryDelayMs(a))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(11)).toBe(60 * 60_000);
    expect(retryDelayMs(500)).toBe(60 * 60_000);
  });

  it('behavior: an event still undelivered 3 days after it was recorded is given up at its next failure, and never sent again', async () => {
    const id = await addEvent();
    await db.execute(
      sql`update event_outbox set recorded_at = now() - interval '3 days 1 minute' where event_id = ${id}`,
    );
    answer = 503;
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 0, givenUp: 1 });
    expect(await row(id)).toMatchObject({ attempts: 1, delivered: false, given_up: true });
    answer = 200;
    expect(await deliverEvents(deps())).toEqual({ delivered: 0, failed: 0, givenUp: 0 });
    expect(received).toHaveLength(1);
    expect(lines.some((l) => l.includes('outbound event given up'))).toBe(true);
  });

  it('behavior: a claim whose lease ends without a mark (a crashed or stuck deliverer) is sent again, same id and body', async () => {
    const id = await addEvent();
    delayMs = 700;
    // Run A claims it and waits on the slow receiver; past A's lease, run B claims it again.
    const a = deliverEvents(deps({ leaseMs: 200 }));
    await new Promise((r) => setTimeout(r, 400));
    const b = deliverEvents(deps({ leaseMs: 200 }));
    const results = await Promise.all([a, b]);
    expect(results.map((r) => r.delivered)).toEqual([1, 1]);
    expect(received.map((r) => r.headers['x-stablebooks-event-id'])).toEqual([id, id]);
    expect(received[0]?.body).toBe(received[1]?.body);
    expect(await row(id)).toMatchObject({ delivered: true });
  });

  it('behavior: two runs at once never send the same row twice while its lease holds', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, () => addEvent()));
    delayMs = 20;
    await Promise.all([deliverEvents(deps()), deliverEvents(deps()), deliverEvents(deps())]);
    const sent = received.map((r) => String(r.headers['x-stablebooks-event-id']));
    expect(sent.sort()).toEqual([...ids].sort());
  });

  it('security: the events secret and the URL never reach the log, whatever the receiver answers', async () => {
    await addEvent();
    answer = 500;
    await deliverEvents(deps());
    await db.execute(
      sql`update event_outbox set recorded_at = now() - interval '4 days', next_attempt_at = now()`,
    );
    await deliverEvents(deps());
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).not.toContain(SECRET);
      expect(line).not.toContain(URL_TOKEN);
    }
    const { rows } = await db.execute<{ last_error: string }>(sql`select last_error from event_outbox`);
    expect(rows[0]?.last_error).not.toContain(URL_TOKEN);
  });

  it('behavior: the prune deletes old delivered and given-up rows; undelivered ones only when delivery is off', async () => {
    const [delivered, givenUp, pending, fresh] = [
      await addEvent(),
      await addEvent(),
      await addEvent(),
      await addEvent(),
    ];
    await db.execute(sql`update event_outbox set delivered_at = now() where event_id = ${delivered}`);
    await db.execute(sql`update event_outbox set given_up_at = now() where event_id = ${givenUp}`);
    await db.execute(
      sql`update event_outbox set recorded_at = now() - interval '8 days' where event_id <> ${fresh}`,
    );
    const week = 7 * 24 * 60 * 60_000;
    expect(await pruneEvents(db, { retentionMs: week, deliveryOn: true })).toBe(2);
    const left = async () =>
      (await db.execute<{ event_id: string }>(sql`select event_id from event_outbox order by id`)).rows.map(
        (r) => r.event_id,
      );
    expect(await left()).toEqual([pending, fresh]);
    expect(await pruneEvents(db, { retentionMs: week, deliveryOn: false })).toBe(1);
    expect(await left()).toEqual([fresh]);
  });
});
