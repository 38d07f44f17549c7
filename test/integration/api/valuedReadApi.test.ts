import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { sql } from 'drizzle-orm';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { registerReadApi } from '../../../src/api/registerReadApi.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { AccountKind, Token } from '../../../src/ledger/accounts.ts';
import { formatFiat } from '../../../src/money/formatFiat.ts';
import { valueLedger } from '../../../src/valuation/valueLedger.ts';
import { postOnDay } from '../../helpers/postOnDay.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDC_BASE, USDT_ETH } from '../../helpers/tokens.ts';

// The read API's `value=CUR` on real postings and rates: balances answer what valueLedger
// computes, entries each posting's value and rounding line, unvalued as null (never 0), every
// answer valid against the API's own OpenAPI document; an unknown currency is a 400.
const { db } = await createMigratedDatabase('valued_read_api');
const TOKEN = 'api-token-0123456789-abcdef';
const USDT = USDT_ETH;
const S = 'st_a';
// USDC is valued at par 1 for this store; USDT by the imported rates.
const stores = [{ storeId: S, par: new Map([['USDC', '1']]) }];

const app = Fastify();
await registerReadApi(app, {
  token: TOKEN,
  domain: { db, chains: createChainRegistry(), encryptionKey: Buffer.alloc(32), stores },
});
await app.ready();
afterAll(() => app.close());

const doc = (
  await app.inject({ url: '/api/v1/openapi.json', headers: { authorization: `Bearer ${TOKEN}` } })
).json() as { paths: Record<string, { get: { responses: Record<string, unknown> } }>; components: unknown };
const DOC_ID = 'https://stablebooks.invalid/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: DOC_ID, components: doc.components });
const validators = new Map<string, ValidateFunction>();

/** GET on the API, the answer validated against the document's schema for its route and status. */
async function get(route: string, query: string) {
  const res = await app.inject({
    url: `/api/v1${route}${query}`,
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const body = res.json() as Record<string, unknown>;
  const key = `${route} ${res.statusCode}`;
  let validate = validators.get(key);
  if (!validate) {
    const response = doc.paths[`/api/v1${route}`]?.get.responses[String(res.statusCode)] as
      | { content: { 'application/json': { schema: { $ref: string } } } }
      | undefined;
    expect(response, `${key} is not documented`).toBeDefined();
    validate = ajv.compile({ $ref: `${DOC_ID}${response!.content['application/json'].schema.$ref}` });
    validators.set(key, validate);
  }
  expect(validate(body) ? [] : validate.errors, `${key}: ${res.body.slice(0, 500)}`).toEqual([]);
  return { status: res.statusCode, body };
}

const post = (key: string, day: string, token: Token, lines: [string, bigint][]) =>
  postOnDay(db, { key, day, storeId: S, token, lines: lines as [AccountKind, bigint][] });

await db.execute(sql`
  insert into rates (rate_date, asset, currency, rate, source, source_ref) values
    ('2026-11-02', 'USDT', 'EUR', 0.9234, 'import', ''), ('2026-11-03', 'USDT', 'EUR', 0.93, 'import', '')`);
// The worked example (docs/accounting.md, "Valuation"), then a USDT sale on a day without a rate,
// then a USDC sale valued at par.
await post('c-1', '2026-11-02', USDT, [
  ['assets:in_transit', 24_700_000n],
  ['expense:service_fees', 300_000n],
  ['income:sales', -25_000_000n],
]);
await post('c-2', '2026-11-04', USDT, [
  ['assets:in_transit', 1_000_000n],
  ['income:sales', -1_000_000n],
]);
await post('c-3', '2026-11-03', USDC_BASE, [
  ['assets:in_transit', 2_500_000n],
  ['income:sales', -2_500_000n],
]);

type Balance = {
  code: string;
  value?: string | null;
  unvalued?: number;
  closing_value?: string | null;
  unrealised?: string | null;
};

describe('read API: value=CUR', () => {
  it('behavior: balances answer the values valueLedger computes, the same accounts, unvalued as null', async () => {
    const at = '2026-11-04T00:00:00Z';
    const { status, body } = await get('/balances', `?value=EUR&at=${at}`);
    expect(status).toBe(200);
    const v = await valueLedger(db, { currency: 'EUR', at: new Date(at), stores });
    const fiat = (m: bigint | null) => (m === null ? null : formatFiat(m, 2));
    const accounts = body.accounts as Balance[];
    expect(accounts.map((a) => [a.code, a.value, a.unvalued, a.closing_value, a.unrealised])).toEqual(
      v.accounts.map((a) => [
        a.code,
        a.unvalued > 0 ? null : fiat(a.value),
        a.unvalued,
        fiat(a.closingValue),
        fiat(a.unrealised),
      ]),
    );
    // By hand: 24.70 x 0.9234 = 22.81 in transit, closing at 0.93 on 3 Nov: 22.97, a gain of 0.16;
    // the USDC at par: 2.50, closing 2.50.
    const by = new Map(accounts.map((a) => [a.code, a]));
    expect(by.get('assets:in_transit:st_a:1:USDT')).toMatchObject({
      value: '22.81',
      unvalued: 0,
      closing_value: '22.97',
      unrealised: '0.16',
    });
    expect(by.get('assets:in_transit:st_a:8453:USDC')).toMatchObject({ value: '2.50', unrealised: '0.00' });
    expect(by.get('income:sales:st_a:1:USDT')).toMatchObject({ value: '-23.08', closing_value: null });
    expect(body.valuation).toEqual({
      currency: 'EUR',
      closing_date: '2026-11-03',
      rounding: [{ store_id: 'st_a', value: '-0.01' }],
      missing_rates: [],
    });

    // Now, with the sale of 4 Nov that no rate values: unvalued, never 0.
    const now = await get('/balances', '?value=EUR');
    const sales = (now.body.accounts as Balance[]).find((a) => a.code === 'income:sales:st_a:1:USDT');
    expect(sales).toMatchObject({ value: null, unvalued: 1, closing_value: null, unrealised: null });
    expect((now.body.valuation as { missing_rates: unknown[] }).missing_rates).toEqual([
      { store_id: 'st_a', date: '2026-11-04', symbol: 'USDT' },
    ]);
    // Read-only: the API records no finding.
    const findings = await db.execute(sql`select 1 from findings where kind = 'valuation_rate_missing'`);
    expect(findings.rows).toHaveLength(0);
  });

  it('behavior: entries answer each posting’s value and the rounding line; without value, no fiat field', async () => {
    const { body } = await get('/entries', '?value=EUR');
    const entries = body.entries as {
      ref_id: string;
      postings: { account: string; value?: string | null }[];
      value_rounding?: string | null;
    }[];
    const byRef = new Map(entries.map((e) => [e.ref_id, e]));
    expect(byRef.get('c-1')!.postings.map((p) => [p.account, p.value])).toEqual([
      ['assets:in_transit:st_a:1:USDT', '22.81'],
      ['expense:service_fees:st_a:1:USDT', '0.28'],
      ['income:sales:st_a:1:USDT', '-23.08'],
    ]);
    expect(byRef.get('c-1')!.value_rounding).toBe('-0.01');
    expect(byRef.get('c-2')!.postings.map((p) => p.value)).toEqual([null, null]);
    expect(byRef.get('c-2')!.value_rounding).toBeNull();
    expect(byRef.get('c-3')!.value_rounding).toBe('0.00');

    const plain = await get('/entries', '');
    const first = (plain.body.entries as Record<string, unknown>[])[0]!;
    expect(first).not.toHaveProperty('value_rounding');
    expect((first.postings as Record<string, unknown>[])[0]).not.toHaveProperty('value');
    expect((await get('/balances', '')).body).not.toHaveProperty('valuation');
  });

  it('error: an unknown or malformed currency is a 400 naming the parameter', async () => {
    for (const bad of ['XYZ', 'eur', 'EURO', '']) {
      for (const route of ['/balances', '/entries']) {
        const { status, body } = await get(route, `?value=${encodeURIComponent(bad)}`);
        expect(status, `${route} ${bad}`).toBe(400);
        expect(body).toEqual({
          ok: false,
          reason: 'value: must be an ISO 4217 currency code in capitals, e.g. EUR',
        });
      }
    }
  });
});
