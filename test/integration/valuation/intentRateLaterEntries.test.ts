import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { registerReadApi } from '../../../src/api/registerReadApi.ts';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { AccountKind } from '../../../src/ledger/accounts.ts';
import { importRates } from '../../../src/rates/importRates.ts';
import { valueLedger } from '../../../src/valuation/valueLedger.ts';
import { postOnDay } from '../../helpers/postOnDay.ts';
import { runCli } from '../../helpers/runCli.ts';
import { createMigratedDatabase } from '../../helpers/testDatabase.ts';
import { USDT_ETH } from '../../helpers/tokens.ts';

// An intent's own rate values every entry of that intent, not only rule 1's: here the payment
// proven a day later, whose day has another imported rate. The rate comes with each entry from its
// intent's rule-1 entry (no table of every intent's rate is held), so it must survive the rule-1
// entry being on another page (valueLedger), before the exported period (export --from), or off
// the API's page (entries?limit=1). Each figure below differs if the intent rate were dropped.
const { db, url } = await createMigratedDatabase('intent_rate_later');
const USDT = USDT_ETH;
const S = 'st_i';
const TOKEN = 'api-token-0123456789-abcdef';

const post = (
  key: string,
  kind: string,
  day: string,
  intentId: string,
  lines: [AccountKind, bigint][],
  metadata?: Record<string, unknown>,
) => postOnDay(db, { key, kind, day, intentId, storeId: S, token: USDT, lines, metadata });

await importRates(db, [
  { line: 2, date: '2026-11-02', asset: 'USDT', currency: 'EUR', rate: '0.95' },
  { line: 3, date: '2026-11-03', asset: 'USDT', currency: 'EUR', rate: '0.96' },
]);
// i-eur priced in EUR (44) at 0.9: both its entries at 0.9, 10 USDT = 9.00 EUR (the 3rd's
// imported rate would make the proof 9.60). i-usd priced in USD (1): its rate is not a EUR rate,
// so its proof is valued at the 3rd's imported 0.96: 5 USDT = 4.80 EUR.
await post(
  'rule1-eur',
  'checkout.confirmed',
  '2026-11-02',
  'i-eur',
  [
    ['assets:in_transit', 10_000_000n],
    ['income:sales', -10_000_000n],
  ],
  { currency: 44, currency_rate: '0.9', amount_cents: '900' },
);
await post(
  'rule1-usd',
  'checkout.confirmed',
  '2026-11-02',
  'i-usd',
  [
    ['assets:in_transit', 5_000_000n],
    ['income:sales', -5_000_000n],
  ],
  { currency: 1, currency_rate: '1.1', amount_cents: '550' },
);
await post('proven-eur', 'chain.payment_proven', '2026-11-03', 'i-eur', [
  ['assets:wallet', 10_000_000n],
  ['assets:in_transit', -10_000_000n],
]);
await post('proven-usd', 'chain.payment_proven', '2026-11-03', 'i-usd', [
  ['assets:wallet', 5_000_000n],
  ['assets:in_transit', -5_000_000n],
]);

const app = Fastify();
await registerReadApi(app, {
  token: TOKEN,
  domain: { db, chains: createChainRegistry(), encryptionKey: Buffer.alloc(32) },
});
await app.ready();
afterAll(() => app.close());

describe("an intent's own rate on its later entries", () => {
  it('behavior: valueLedger values the proof at its intent rate, with the rule-1 entry on another page', async () => {
    for (const pageSize of [1, 5000]) {
      const v = await valueLedger(db, { currency: 'EUR', at: new Date('2026-11-04T00:00:00Z'), pageSize });
      const by = new Map(v.accounts.map((a) => [a.code, a.value]));
      // 9.00 (i-eur at 0.9) + 4.80 (i-usd at 0.96).
      expect(by.get('assets:wallet:st_i:1:USDT'), `pages of ${pageSize}`).toBe(1380n);
      // In at 9.00 + 4.75 (5 x 0.95), out at 9.00 + 4.80.
      expect(by.get('assets:in_transit:st_i:1:USDT'), `pages of ${pageSize}`).toBe(-5n);
    }
  });

  it('behavior: export --value EUR --from the proof day values the proof at its intent rate though rule 1 is before the period', async () => {
    const run = await runCli(
      ['export', '--format', 'csv', '--value', 'EUR', '--from', '2026-11-03T00:00:00Z'],
      { DATABASE_URL: url },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [header, ...rows] = run.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(','));
    const col = (name: string) => header!.indexOf(name);
    const cells = (ref: string) =>
      rows
        .filter((r) => r[col('reference')] === ref)
        .map((r) => [r[col('account')], r[col('value')], r[col('rate')], r[col('rate_source')]]);
    expect(cells('i-eur')).toEqual([
      ['assets:wallet:st_i:1:USDT', '9.00', '0.9', 'intent'],
      ['assets:in_transit:st_i:1:USDT', '-9.00', '0.9', 'intent'],
    ]);
    expect(cells('i-usd')).toEqual([
      ['assets:wallet:st_i:1:USDT', '4.80', '0.96', 'import'],
      ['assets:in_transit:st_i:1:USDT', '-4.80', '0.96', 'import'],
    ]);
  });

  it('behavior: the read API values the proof at its intent rate on a page without the rule-1 entry', async () => {
    const get = async (query: string) => {
      const res = await app.inject({
        url: `/api/v1/entries${query}`,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.statusCode).toBe(200);
      return res.json() as {
        entries: { ref_id: string; kind: string; postings: { value?: string | null }[] }[];
        next_cursor: string | null;
      };
    };
    const newest = await get('?value=EUR&limit=1');
    expect(newest.entries.map((e) => [e.ref_id, e.kind, e.postings.map((p) => p.value)])).toEqual([
      ['i-usd', 'chain.payment_proven', ['4.80', '-4.80']],
    ]);
    const next = await get(`?value=EUR&limit=1&cursor=${newest.next_cursor}`);
    expect(next.entries.map((e) => [e.ref_id, e.kind, e.postings.map((p) => p.value)])).toEqual([
      ['i-eur', 'chain.payment_proven', ['9.00', '-9.00']],
    ]);
    const balances = await app.inject({
      url: '/api/v1/balances?value=EUR&at=2026-11-04T00:00:00Z',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const wallet = (balances.json() as { accounts: { code: string; value: string | null }[] }).accounts.find(
      (a) => a.code === 'assets:wallet:st_i:1:USDT',
    );
    expect(wallet?.value).toBe('13.80');
  });
});
