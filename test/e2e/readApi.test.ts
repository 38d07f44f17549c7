import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALL_ROLES } from '../../src/daemon/roles.ts';
import { rawRpc } from '../../src/devservices/anvil.ts';
import { listFindings } from '../../src/findings/listFindings.ts';
import { recordFinding, resolveFinding } from '../../src/findings/recordFinding.ts';
import { balances } from '../../src/ledger/balances.ts';
import { listEntries } from '../../src/ledger/listEntries.ts';
import { createIntent } from '../../src/payments/createIntent.ts';
import { createPayout } from '../../src/payouts/createPayout.ts';
import { showPayout } from '../../src/payouts/showPayout.ts';
import { startPipeline } from '../helpers/pipelineHarness.ts';

/**
 * The read API (/api/v1 on the operations port, behind API_TOKEN) on a whole pipeline: a daemon
 * in-process with every role, the sandbox on anvil (intents paid, a payout funded), real
 * PostgreSQL and Redis. Every answer read here, 200 or not, is validated with ajv (JSON Schema
 * 2020-12) against the schema the daemon's own OpenAPI document gives for that route and status.
 */
const TOKEN = 'api-token-0123456789-abcdef';
const pipeline = await startPipeline({ finalityDepth: 2 });
const daemon = await pipeline.startDaemon(ALL_ROLES, { config: { apiToken: TOKEN } });
// The harness's config has no API token: that daemon has no API.
const plain = await pipeline.startDaemon(['intake']);
const chain = [...pipeline.sandbox.world.chains.values()][0]!;
const mine = (blocks: number) => rawRpc(chain.rpcUrl, 'anvil_mine', [`0x${blocks.toString(16)}`]);

type Doc = { paths: Record<string, { get: { responses: Record<string, unknown> } }>; components: unknown };
const docRes = await fetch(`${daemon.opsUrl}/api/v1/openapi.json`, {
  headers: { authorization: `Bearer ${TOKEN}` },
});
const served = (await docRes.json()) as Doc & Record<string, unknown>;
const DOC_ID = 'https://stablebooks.invalid/openapi.json';
// The document as one resource, so its `#/components/schemas/...` references resolve; formats are
// left to the schemas' own patterns (zod writes both).
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: DOC_ID, components: served.components });
const validators = new Map<string, ValidateFunction>();
/** Which (route, status) answers were validated, to check every documented one was. */
const seen = new Set<string>();

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
  headers: Headers;
}

/**
 * GET `path` on the API and validate the answer against the document's schema for `route` (the
 * documented path, e.g. /intents/{id}) and the answer's status; an undocumented status fails.
 */
async function get(route: string, path: string, token: string | null = TOKEN, headers = {}): Promise<Answer> {
  const res = await fetch(`${daemon.opsUrl}/api/v1${path}`, {
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...headers },
  });
  const text = await res.text();
  const body = JSON.parse(text) as Record<string, unknown>;
  const key = `${route} ${res.status}`;
  let validate = validators.get(key);
  if (!validate) {
    const response = served.paths[`/api/v1${route}`]?.get.responses[String(res.status)] as
      | { content: { 'application/json': { schema: { $ref: string } } } }
      | undefined;
    expect(response, `${key} is not documented`).toBeDefined();
    validate = ajv.compile({ $ref: `${DOC_ID}${response!.content['application/json'].schema.$ref}` });
    validators.set(key, validate);
  }
  expect(validate(body) ? [] : validate.errors, `${key}: ${text.slice(0, 500)}`).toEqual([]);
  expect(res.headers.get('cache-control')).toBe('no-store');
  seen.add(key);
  return { status: res.status, body, text, headers: res.headers };
}

async function paidIntent(orderId: string): Promise<string> {
  const created = await createIntent(pipeline.payments, 'st_a', {
    stable_coin: 1,
    amount_cents: 2500n,
    order_id: orderId,
    order_description: null,
  });
  const id = created.created.allsvc_checkout_intent_id;
  const paid = await pipeline.sandbox.control(`/_sandbox/intents/${id}/pay`, { route: 'direct' });
  expect(paid.status, JSON.stringify(paid.body)).toBe(200);
  // Confirmed by its webhook, then proven once its transfer is final (2 blocks deep).
  await pipeline.waitFor(async () => {
    await mine(1);
    const { rows } = await pipeline.db.execute<{ n: string }>(
      sql`select count(*)::text as n from ledger_entries where ref_id = ${id} and kind = 'chain.payment_proven'`,
    );
    return rows[0]?.n === '1';
  }, 40_000);
  return id;
}

const intentId = await paidIntent('o-api-1');

describe('read API: behind API_TOKEN', () => {
  it('behavior: without API_TOKEN nothing is registered: 404, and the operations routes still answer', async () => {
    for (const path of ['/api/v1/openapi.json', '/api/v1/balances', `/api/v1/intents/${intentId}`]) {
      const res = await fetch(`${plain.opsUrl}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status, path).toBe(404);
      // Fastify's own not-found answer, nothing of ours.
      expect(await res.json()).toMatchObject({ error: 'Not Found', statusCode: 404 });
    }
    expect((await fetch(`${plain.opsUrl}/healthz`)).status).toBe(200);
  });

  it('error: without the token, with a wrong one or another scheme, every path is 401 with WWW-Authenticate', async () => {
    const routes: Array<[string, string]> = [
      ['/intents/{id}', `/intents/${intentId}`],
      ['/intents', '/intents?order_id=o-api-1'],
      ['/payouts/{id}', '/payouts/po_x'],
      ['/balances', '/balances'],
      ['/findings', '/findings'],
      ['/entries', '/entries'],
      ['/openapi.json', '/openapi.json'],
    ];
    for (const [route, path] of routes) {
      for (const token of [null, `${TOKEN}x`, TOKEN.slice(0, -1), '']) {
        const res = await get(route, path, token);
        expect(res.status, `${path} ${token}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
        expect(res.text).not.toContain(intentId);
      }
      const basic = await get(route, path, null, {
        authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`,
      });
      expect(basic.status).toBe(401);
    }
    // Unknown paths under the prefix too: nothing can be probed without the token.
    const unknown = await fetch(`${daemon.opsUrl}/api/v1/nope`);
    expect(unknown.status).toBe(401);
    const known = await fetch(`${daemon.opsUrl}/api/v1/nope`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(known.status).toBe(404);
  });

  it('behavior: the served document is a valid OpenAPI 3.1 document', async () => {
    const res = await get('/openapi.json', '/openapi.json');
    expect(res.status).toBe(200);
    await SwaggerParser.validate(structuredClone(res.body) as never);
    expect(res.body.openapi).toBe('3.1.0');
  });
});

describe('read API: intents', () => {
  it('behavior: a paid intent: status, history, entries with postings, chain proof and open findings', async () => {
    await recordFinding(
      pipeline.db,
      {
        kind: 'fee_arithmetic_mismatch',
        severity: 'warning',
        ref: { type: 'checkout_intent', id: intentId },
        details: { why: 'a finding about the intent' },
      },
      'st_a',
    );
    const res = await get('/intents/{id}', `/intents/${intentId}`);
    expect(res.status).toBe(200);
    const intent = res.body.intent as Record<string, unknown> & {
      history: Array<{ to_status_name: string; source: string }>;
      entries: Array<{
        kind: string;
        postings: Array<{ account: string; amount: string; amount_decimal: string }>;
      }>;
      chain_proof: {
        proven: boolean;
        tx_hash: string;
        transfers: Array<{
          tx_hash: string;
          block_number: string;
          state: string;
          value: string;
          value_decimal: string;
        }>;
      };
      findings: Array<{ kind: string; severity: string }>;
    };
    expect(intent).toMatchObject({
      id: intentId,
      store_id: 'st_a',
      status: 20,
      status_name: 'CONFIRMED',
      order_id: 'o-api-1',
      amount_coins: '25',
      chain_id: chain.chainId,
    });
    expect(intent.history[0]).toMatchObject({ to_status_name: 'CREATED', source: 'create' });
    expect(intent.history.at(-1)?.to_status_name).toBe('CONFIRMED');
    expect(intent.entries.map((e) => e.kind)).toEqual(['checkout.confirmed', 'chain.payment_proven']);
    const wallet = intent.entries[1]!.postings.find((p) => p.account.startsWith('assets:wallet:'));
    expect(wallet).toMatchObject({ amount: '25000000', amount_decimal: '25' });
    const { rows } = await pipeline.db.execute<{ tx_hash: string; block_number: string }>(
      sql`select tx_hash, block_number::text from chain_transfers where matched_ref = ${intentId}`,
    );
    expect(intent.chain_proof.proven).toBe(true);
    expect(intent.chain_proof.tx_hash).toBe(rows[0]!.tx_hash);
    expect(intent.chain_proof.transfers).toContainEqual(
      expect.objectContaining({
        tx_hash: rows[0]!.tx_hash,
        block_number: rows[0]!.block_number,
        state: 'final',
        value: '25000000',
        value_decimal: '25',
      }),
    );
    expect(intent.findings).toContainEqual(
      expect.objectContaining({ kind: 'fee_arithmetic_mismatch', severity: 'warning' }),
    );
  });

  it('behavior: by order id, a list (empty when none); an unknown id is 404', async () => {
    const byOrder = await get('/intents', '/intents?order_id=o-api-1&store=st_a');
    expect((byOrder.body.intents as Array<{ id: string }>).map((i) => i.id)).toEqual([intentId]);
    const none = await get('/intents', '/intents?order_id=o-none');
    expect(none.body).toEqual({ ok: true, intents: [] });
    const unknown = await get('/intents/{id}', '/intents/0123456789abcdef01234567');
    expect(unknown.status).toBe(404);
    expect(unknown.body.reason).toBe('intent 0123456789abcdef01234567 is not tracked');
  });
});

describe('read API: payouts', () => {
  it('behavior: state, link status, amounts and entries, by payout or claim-link id; never its claim URL or token', async () => {
    const created = await createPayout(pipeline.payments, {
      storeId: 'st_a',
      amount: '5.25',
      coin: 'USDT',
      chain: chain.chainId,
      referenceId: 'api-payout-1',
    });
    const id = created.payout.id;
    const linkId = created.payout.claimLinkId!;
    // The secrets exist, sealed in the database.
    const secret = (await showPayout(pipeline.payments, id, { reveal: true })).payout;
    expect(secret.claim_token).toMatch(/\w{8,}/);
    expect(secret.claim_url).toContain(secret.claim_token);

    for (const ref of [id, linkId]) {
      const res = await get('/payouts/{id}', `/payouts/${ref}`);
      expect(res.status).toBe(200);
      expect(res.body.payout).toMatchObject({
        id,
        claim_link_id: linkId,
        store_id: 'st_a',
        reference_id: 'api-payout-1',
        create_outcome: 'created',
        amount: '5.25',
        amount_base_units: '5250000',
        coin: 'USDT',
        chain_id: chain.chainId,
      });
      const payout = res.body.payout as { entries: Array<{ kind: string }>; link_status: string | null };
      expect(payout.link_status).not.toBeNull();
      expect(payout.entries.map((e) => e.kind)).toContain('claim_link.funded');
      expect(res.text).not.toContain(secret.claim_token!);
      expect(res.text).not.toContain(secret.claim_url!);
      expect(res.text).not.toMatch(/claim_url|claim_token|\/claim\//);
    }
    const unknown = await get('/payouts/{id}', '/payouts/po_nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ ok: false, reason: 'payout po_nope does not exist' });
  });
});

describe('read API: balances', () => {
  it('behavior: now and at a time, in base units and decimals, as strings; the trial balance nets to zero', async () => {
    const now = await get('/balances', '/balances?store=st_a');
    expect(now.body.at).toBeNull();
    const accounts = now.body.accounts as Array<{ code: string; balance: string; balance_decimal: string }>;
    const expected = await balances(pipeline.db, { storeId: 'st_a' });
    expect(accounts.map((a) => [a.code, a.balance])).toEqual(
      expected.map((b) => [b.code, b.balance.toString()]),
    );
    const sales = accounts.find((a) => a.code.startsWith('income:sales:st_a:') && a.code.endsWith(':USDT'));
    expect(sales?.balance).toMatch(/^-\d+$/);
    // The one sale of the file: the intent's 25 USDT.
    expect(sales).toMatchObject({ balance: '-25000000', balance_decimal: '-25' });
    for (const line of now.body.trial_balance as Array<{ net: string; net_decimal: string }>) {
      expect(line.net).toBe('0');
      expect(line.net_decimal).toBe('0');
    }
    // Money is never a JSON number anywhere in the answer.
    expect(now.text).not.toMatch(/"(balance|debits|credits|net)[a-z_]*":-?\d/);

    const before = await get('/balances', '/balances?store=st_a&at=2000-01-01T00:00:00Z');
    expect(before.body.at).toBe('2000-01-01T00:00:00.000Z');
    for (const a of before.body.accounts as Array<{ balance: string }>) expect(a.balance).toBe('0');
  });
});

describe('read API: findings', () => {
  it('behavior: by status, kind, severity and store, a page at a time by cursor', async () => {
    const ref = (id: string) => ({ type: 'test', id });
    await recordFinding(
      pipeline.db,
      { kind: 'payment_tx_reverted', severity: 'critical', ref: ref('a1'), details: {} },
      'st_a',
    );
    await recordFinding(
      pipeline.db,
      { kind: 'payment_tx_reverted', severity: 'info', ref: ref('a2'), details: {} },
      null,
    );
    await recordFinding(
      pipeline.db,
      { kind: 'payment_tx_not_found', severity: 'info', ref: ref('b1'), details: { n: 1 } },
      'st_a',
    );
    await resolveFinding(pipeline.db, 'payment_tx_not_found', ref('b1'));

    const open = await get('/findings', '/findings?kind=payment_tx_reverted');
    expect((open.body.findings as Array<{ ref_id: string }>).map((f) => f.ref_id)).toEqual(['a2', 'a1']);
    expect(open.body.next_cursor).toBeNull();
    const critical = await get(
      '/findings',
      '/findings?kind=payment_tx_reverted&severity=critical&store=st_a',
    );
    expect((critical.body.findings as Array<{ ref_id: string }>).map((f) => f.ref_id)).toEqual(['a1']);
    const resolved = await get('/findings', '/findings?status=resolved');
    expect(resolved.body.findings).toEqual([
      expect.objectContaining({
        kind: 'payment_tx_not_found',
        ref_id: 'b1',
        details: { n: 1 },
        resolved_at: expect.any(String),
      }),
    ]);

    const all = await listFindings(pipeline.db, { order: 'id', limit: 10_000 });
    expect(all.length).toBeGreaterThanOrEqual(4);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await get(
        '/findings',
        `/findings?status=all&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      paged.push(...(page.body.findings as Array<{ id: string }>).map((f) => f.id));
      cursor = page.body.next_cursor as string | null;
      expect(paged.length).toBeLessThanOrEqual(all.length);
    } while (cursor);
    expect(paged).toEqual(all.map((f) => f.id));
  });
});

describe('read API: entries', () => {
  it('behavior: by period and store, newest first, a page at a time: the cursor neither repeats nor skips', async () => {
    const all = await listEntries(pipeline.db, { limit: 10_000 });
    expect(all.length).toBeGreaterThanOrEqual(3);
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await get('/entries', `/entries?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      const entries = page.body.entries as Array<{ id: string }>;
      expect(entries.length).toBeLessThanOrEqual(2);
      paged.push(...entries.map((e) => e.id));
      cursor = page.body.next_cursor as string | null;
    } while (cursor);
    expect(paged).toEqual(all.map((e) => e.id.toString()));

    // [from, to): from a middle entry's time to just after the last one.
    const times = all.map((e) => e.occurredAt.getTime()).sort((x, y) => x - y);
    const from = new Date(times[Math.floor(times.length / 2)]!).toISOString();
    const to = new Date(times.at(-1)! + 1).toISOString();
    const period = await get('/entries', `/entries?from=${from}&to=${to}&store=st_a&limit=500`);
    const times2 = (period.body.entries as Array<{ occurred_at: string }>).map((e) => e.occurred_at);
    for (const at of times2) expect(at >= from && at < to, at).toBe(true);
    const expected = all.filter(
      (e) => e.storeId === 'st_a' && e.occurredAt.toISOString() >= from && e.occurredAt.toISOString() < to,
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(times2).toHaveLength(expected.length);
    const early = await get('/entries', `/entries?to=${from}`);
    expect((early.body.entries as unknown[]).length).toBe(
      all.filter((e) => e.occurredAt.toISOString() < from).length,
    );
  });
});

describe('read API: bad requests', () => {
  it('error: a bad, unknown or repeated parameter is 400 naming it', async () => {
    const cases: Array<[string, string, string | RegExp]> = [
      ['/findings', '/findings?limit=0', 'limit: must be a whole number from 1 to 500'],
      ['/findings', '/findings?limit=abc', 'limit: must be a whole number from 1 to 500'],
      ['/findings', '/findings?status=closed', 'status: must be open, resolved or all'],
      ['/findings', '/findings?severity=high', 'severity: must be info, warning or critical'],
      ['/findings', '/findings?cursor=42', 'cursor: is not a cursor this list gave (next_cursor)'],
      ['/entries', '/entries?from=yesterday', /^from: must be an ISO 8601 time/],
      ['/entries', '/entries?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z', 'to: must be after from'],
      ['/entries', '/entries?stor=st_a', 'stor: unknown parameter'],
      ['/entries', '/entries?limit=1&limit=2', 'limit: given more than once'],
      ['/balances', '/balances?at=2025-13-01T00:00:00Z', /^at: /],
      ['/intents', '/intents', 'order_id: is required: the order id the intents were created with'],
      ['/intents/{id}', `/intents/${intentId}?verbose=1`, 'verbose: unknown parameter'],
      ['/payouts/{id}', '/payouts/po%20x', 'id: must be 1 to 128 printable characters'],
      ['/openapi.json', '/openapi.json?x=1', 'x: unknown parameter'],
      // What PostgreSQL would refuse is refused first, naming the parameter.
      ['/intents', '/intents?order_id=%00', 'order_id: must not hold a NUL character'],
      ['/intents', '/intents?order_id=a%00b', 'order_id: must not hold a NUL character'],
      ['/balances', '/balances?at=0000-01-01T00:00:00Z', /^at: must be between 0001-01-01 and 9999-12-31/],
      ['/balances', '/balances?at=9999-12-31T23:59:59-23:59', /^at: /],
      ['/balances', '/balances?at=2025-01-01T00:00:00%2B15:00', /^at: /],
      ['/entries', '/entries?from=0000-01-01T00:00:00Z', /^from: must be between 0001-01-01/],
      ['/entries', '/entries?to=0001-01-01T00:00:00%2B01:00', /^to: /],
    ];
    for (const [route, path, reason] of cases) {
      const res = await get(route, path);
      expect(res.status, path).toBe(400);
      expect(res.body.ok).toBe(false);
      if (typeof reason === 'string') expect(res.body.reason, path).toBe(reason);
      else expect(res.body.reason, path).toMatch(reason);
    }
  });

  /** Percent-encodes `text`'s UTF-8 bytes (a lone surrogate as U+FFFD, as a client's would). */
  const pathSegment = (text: string) =>
    [...Buffer.from(text, 'utf8')]
      .map((b) =>
        /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b))
          ? String.fromCharCode(b)
          : `%${b.toString(16).padStart(2, '0')}`,
      )
      .join('');

  it('behavior: odd parameters (any text, NUL, far years, odd offsets, huge numbers, forged cursors) are never a 5xx', async () => {
    const anyText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({
        unit: fc.constantFrom('\u0000', '\u001b', '\u007f', '\u0085', '\ud800', '%', '+', '&', '=', ' ', 'a'),
        maxLength: 8,
      }),
      fc.constantFrom('', '\u0000', 'a\u0000b', '%00', '\ufeff', 'x'.repeat(300)),
    );
    const twoDigits = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const isoTime = fc
      .record({
        year: fc.oneof(fc.integer({ min: 0, max: 9999 }), fc.constantFrom(0, 1, 1969, 1970, 9999)),
        month: fc.integer({ min: 1, max: 12 }),
        day: fc.integer({ min: 1, max: 31 }),
        hour: twoDigits(23),
        minute: twoDigits(59),
        second: twoDigits(59),
        fraction: fc.constantFrom('', '.0', '.999', '.123456789'),
        zone: fc.oneof(
          fc.constant('Z'),
          fc
            .tuple(fc.constantFrom('+', '-'), twoDigits(23), twoDigits(59))
            .map(([sign, h, m]) => `${sign}${h}:${m}`),
        ),
      })
      .map(
        (t) =>
          `${String(t.year).padStart(4, '0')}-${String(t.month).padStart(2, '0')}-${String(t.day).padStart(2, '0')}T${t.hour}:${t.minute}:${t.second}${t.fraction}${t.zone}`,
      );
    const number = fc.oneof(
      fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }).map(String),
      fc.constantFrom('0', '-1', '1', '500', '501', '1e3', '0x10', '1.5', '9'.repeat(40)),
    );
    const cursor = fc.oneof(
      fc
        .tuple(fc.constantFrom('entries', 'findings', 'x'), fc.oneof(number, anyText))
        .map(([list, id]) => Buffer.from(`v1:${list}:${id}`, 'utf8').toString('base64url')),
      anyText,
    );
    const value = fc.oneof(anyText, isoTime, number, cursor);
    const params: Record<string, string[]> = {
      '/intents': ['order_id', 'store'],
      '/balances': ['store', 'at'],
      '/findings': ['status', 'kind', 'severity', 'store', 'limit', 'cursor'],
      '/entries': ['from', 'to', 'store', 'limit', 'cursor'],
    };
    // Percent-encodings a client may send that decode to no text, or to a NUL or an override.
    const rawEncoded = fc.constantFrom(
      '%ff',
      '%c0%80',
      '%ed%a0%80',
      '%',
      '%%00',
      '%u0000',
      '%E2%80%AE',
      '%00',
    );
    const query = (route: string) => {
      const name = fc.constantFrom(...(params[route] as string[]), 'nope');
      return fc
        .tuple(
          fc.array(fc.tuple(name, value), { maxLength: 4 }),
          fc.option(fc.tuple(name, rawEncoded), { nil: undefined }),
        )
        .map(([pairs, raw]) => {
          const encoded = new URLSearchParams(pairs).toString();
          return `${route}?${[encoded, raw ? `${raw[0]}=${raw[1]}` : ''].filter(Boolean).join('&')}`;
        });
    };
    const request = fc.oneof(
      ...Object.keys(params).map((route) => query(route).map((path) => [route, path] as const)),
      fc
        .tuple(
          fc.constantFrom('/intents/{id}', '/payouts/{id}'),
          // `.` and `..` are dot segments fetch would resolve away.
          anyText.filter((t) => t.length > 0 && t !== '.' && t !== '..'),
        )
        .map(([route, id]) => [route, route.replace('{id}', pathSegment(id))] as const),
    );
    await fc.assert(
      fc.asyncProperty(request, async ([route, path]) => {
        const res = await get(route, path);
        expect([200, 400, 404], `${path}: ${res.text.slice(0, 300)}`).toContain(res.status);
      }),
      {
        numRuns: 400,
        ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}),
        ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
      },
    );
  }, 120_000);

  it('behavior: every route was answered and validated with 200, 400 and 401, and the id routes with 404', () => {
    for (const route of Object.keys(served.paths).map((p) => p.replace('/api/v1', ''))) {
      for (const status of [200, 400, 401])
        expect(seen, `${route} ${status}`).toContain(`${route} ${status}`);
      if (route.endsWith('{id}')) expect(seen).toContain(`${route} 404`);
    }
  });

  it('behavior: the API token is in no log line', () => {
    expect(pipeline.logs.length).toBeGreaterThan(0);
    expect(pipeline.logs.join('')).not.toContain(TOKEN);
    expect(pipeline.logs.join('')).not.toContain(TOKEN.slice(0, -1));
  });
});
