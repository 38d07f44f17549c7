import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { inspectConfig, loadConfig, loadDatabaseUrl } from '../../../src/config/loadConfig.ts';
import { loadQueueSettings } from '../../../src/config/loadQueueSettings.ts';

const dir = mkdtempSync(join(tmpdir(), 'sb-config-'));
function storesFile(content: unknown): string {
  const path = join(dir, `stores-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(content));
  return path;
}
const wallet = { merchant: `0x${'a'.repeat(40)}`, custody: `0x${'b'.repeat(40)}` };
const store = {
  store_id: 'st_a',
  business_id: 'biz_1',
  api_key: 'pk_a',
  api_secret_env: 'SVC_SECRET_A',
  signed_response: true,
  wallets: { '11155111': wallet },
};
const key = Buffer.alloc(32, 7).toString('base64');

function validEnv(): Record<string, string | undefined> {
  return {
    DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    SVC_BASE_URL: 'http://127.0.0.1:9000',
    STORES_FILE: storesFile([store]),
    SVC_SECRET_A: 'secret-of-store-a',
    ENCRYPTION_KEY: key,
    RPC_URL_11155111: 'http://127.0.0.1:8545, http://127.0.0.1:8546',
  };
}

function problemsOf(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('behavior: a valid environment parses with defaults and resolved secrets', () => {
    const config = loadConfig(validEnv());
    expect(config.port).toBe(8080);
    expect(config.logLevel).toBe('info');
    expect(config.reconCron).toBe('0 1 * * *');
    expect(config.reportsDir).toBe('./reports');
    expect(config.encryptionKey).toHaveLength(32);
    expect(config.rpcUrls.get(11155111)).toEqual(['http://127.0.0.1:8545', 'http://127.0.0.1:8546']);
    expect(config.stores[0]).toMatchObject({
      storeId: 'st_a',
      apiSecret: 'secret-of-store-a',
      signedResponse: true,
    });
    expect(config.stores[0]?.wallets.get(11155111)?.merchant).toBe(wallet.merchant);
  });

  it('behavior: a store is valued in USD without par unless it says otherwise; a bad currency or par rate is refused', () => {
    expect(loadConfig(validEnv()).stores[0]).toMatchObject({ functionalCurrency: 'USD', par: new Map() });
    const eur = {
      ...validEnv(),
      STORES_FILE: storesFile([{ ...store, functional_currency: 'EUR', par: { USDT: '1', USDC: '0.92' } }]),
    };
    expect(loadConfig(eur).stores[0]).toMatchObject({
      functionalCurrency: 'EUR',
      par: new Map([
        ['USDT', '1'],
        ['USDC', '0.92'],
      ]),
    });
    for (const bad of [
      { functional_currency: 'eur' },
      { par: { USDT: 1 } },
      { par: { USDT: '0' } },
      { par: { DAI: '1' } },
    ]) {
      const problems = problemsOf({ ...validEnv(), STORES_FILE: storesFile([{ ...store, ...bad }]) });
      expect(problems, JSON.stringify(bad)).toHaveLength(1);
      expect(problems[0], JSON.stringify(bad)).toMatch(/^STORES_FILE: .*\[0\]\.(functional_currency|par)/);
    }
  });

  it('error: one line per bad or missing variable, all at once', () => {
    const env = {
      ...validEnv(),
      DATABASE_URL: undefined,
      REDIS_URL: 'http://nope',
      PORT: '99999',
      ENCRYPTION_KEY: 'c2hvcnQ=',
    };
    const problems = problemsOf(env);
    expect(problems).toEqual(
      expect.arrayContaining([
        'DATABASE_URL: is required but not set',
        expect.stringMatching(/^REDIS_URL: must be a redis/),
        expect.stringMatching(/^PORT: /),
        expect.stringMatching(/^ENCRYPTION_KEY: must be 32 bytes/),
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it('error: never echoes a secret value in a problem', () => {
    const badKey = 'this-is-a-secret-but-not-base64!!';
    const problems = problemsOf({ ...validEnv(), ENCRYPTION_KEY: badKey });
    expect(problems.join('\n')).not.toContain(badKey);
  });

  it('error: a store naming an unset secret variable says which', () => {
    const env = { ...validEnv(), SVC_SECRET_A: undefined };
    expect(problemsOf(env)).toEqual([
      'STORES_FILE: store st_a names api_secret_env SVC_SECRET_A, which is not set',
    ]);
  });

  it('error: a headers timeout longer than the request timeout is refused, naming both', () => {
    const env = { ...validEnv(), HTTP_REQUEST_TIMEOUT_MS: '5000', HTTP_HEADERS_TIMEOUT_MS: '6000' };
    expect(problemsOf(env)).toEqual([
      'HTTP_HEADERS_TIMEOUT_MS: must be at most HTTP_REQUEST_TIMEOUT_MS (5000): the headers are part of the request',
    ]);
    expect(problemsOf({ ...env, HTTP_HEADERS_TIMEOUT_MS: '5000' })).toEqual([]);
  });

  it('error: wallets on a chain without RPC_URL_<id>', () => {
    const env = { ...validEnv(), RPC_URL_11155111: undefined };
    expect(problemsOf(env)).toEqual([
      'RPC_URL_11155111: is required because store st_a has wallets on chain 11155111',
    ]);
  });

  it('error: malformed stores file names the field', () => {
    const env = {
      ...validEnv(),
      STORES_FILE: storesFile([
        { ...store, wallets: { '1': { merchant: '0x12', custody: wallet.custody } } },
      ]),
    };
    expect(problemsOf(env)[0]).toMatch(
      /STORES_FILE: .*\[0\]\.wallets\.1\.merchant: must be a 0x-prefixed 20-byte hex address/,
    );
    expect(problemsOf({ ...validEnv(), STORES_FILE: join(dir, 'missing.json') })[0]).toMatch(
      /file not found/,
    );
  });

  it('error: an address that is a merchant wallet and a custody wallet on one chain, one line', () => {
    // The settlement matcher keys watched wallets by address, so it cannot tell which role a
    // transfer is for (custody won, and every payment went to suspense): refused at load.
    const both = `0x${'c'.repeat(40)}`;
    const line = (merchantOf: string, custodyOf: string) =>
      `STORES_FILE: chain 11155111: address ${both} is the merchant wallet of ${merchantOf} and the custody wallet of ${custodyOf}; an address can hold one role only, because transfers are matched by address: give the merchant and the custody wallet different addresses`;
    const withWallets = (s: typeof store, merchant: string, custody: string) => ({
      ...s,
      wallets: { '11155111': { merchant, custody } },
    });
    const storeB = { ...store, store_id: 'st_b', api_key: 'pk_b' };
    const storeC = { ...store, store_id: 'st_c', api_key: 'pk_c' };
    const problemsWith = (stores: unknown[]) =>
      problemsOf({ ...validEnv(), STORES_FILE: storesFile(stores) });

    // One store, both roles.
    expect(problemsWith([withWallets(store, both, both)])).toEqual([line('store st_a', 'store st_a')]);
    // Merchant of one store, custody of another, in either order; address case does not matter.
    const merchantA = withWallets(store, both, wallet.custody);
    const custodyB = withWallets(storeB, wallet.merchant, `0x${'C'.repeat(40)}`);
    expect(problemsWith([merchantA, custodyB])).toEqual([line('store st_a', 'store st_b')]);
    expect(problemsWith([custodyB, merchantA])).toEqual([line('store st_a', 'store st_b')]);
    // A custody wallet two stores share, which a third uses as its merchant wallet: still one line,
    // collected with the other problems.
    const custodyC = withWallets(storeC, `0x${'e'.repeat(40)}`, both);
    expect(
      problemsOf({
        ...validEnv(),
        RPC_URL_11155111: undefined,
        STORES_FILE: storesFile([merchantA, custodyB, custodyC]),
      }),
    ).toEqual([
      line('store st_a', 'stores st_b, st_c'),
      'RPC_URL_11155111: is required because store st_a has wallets on chain 11155111',
      'RPC_URL_11155111: is required because store st_b has wallets on chain 11155111',
      'RPC_URL_11155111: is required because store st_c has wallets on chain 11155111',
    ]);
  });

  it('behavior: an address shared by stores in one role, or in two roles on different chains, is allowed', () => {
    const storeB = { ...store, store_id: 'st_b', api_key: 'pk_b' };
    // A business's stores share one custody wallet (and may share a merchant wallet).
    const shared = loadConfig({
      ...validEnv(),
      STORES_FILE: storesFile([
        store,
        { ...storeB, wallets: { '11155111': { merchant: wallet.merchant, custody: wallet.custody } } },
      ]),
    });
    expect(shared.stores).toHaveLength(2);
    // The same address as merchant on one chain and custody on another: each chain has its own
    // watched wallets, so there is nothing to confuse.
    const twoChains = loadConfig({
      ...validEnv(),
      RPC_URL_1: 'http://127.0.0.1:8547',
      STORES_FILE: storesFile([
        {
          ...store,
          wallets: {
            '11155111': wallet,
            '1': { merchant: wallet.custody, custody: `0x${'d'.repeat(40)}` },
          },
        },
      ]),
    });
    expect(twoChains.stores[0]?.wallets.get(1)?.merchant).toBe(wallet.custody);
  });

  it('behavior: migrate needs only DATABASE_URL', () => {
    expect(loadDatabaseUrl({ DATABASE_URL: 'postgresql://x@h/d' })).toBe('postgresql://x@h/d');
    expect(() => loadDatabaseUrl({})).toThrow(/DATABASE_URL: is required but not set/);
  });

  it('error: a URL variable that is not a URL names itself and what it must be, never its value', () => {
    // `new URL()` used to throw inside the schema: the whole parse died as a bare "Invalid URL".
    const secretish = 'not a url but maybe a secret';
    const problems = problemsOf({
      ...validEnv(),
      DATABASE_URL: 'nonsense',
      REDIS_URL: secretish,
      SVC_BASE_URL: '::',
      ALERT_WEBHOOK_URL: 'nope',
      ALERT_WEBHOOK_SECRET: 'x'.repeat(16),
      ALERT_SLACK_WEBHOOK_URL: secretish,
      CLOCK_URL: 'ftp://127.0.0.1/clock',
    });
    expect(problems).toEqual([
      'DATABASE_URL: must be a postgres:// URL (got something that is not a URL)',
      'REDIS_URL: must be a redis:// or rediss:// URL (got something that is not a URL)',
      'SVC_BASE_URL: must be an http(s) URL (got something that is not a URL)',
      'ALERT_WEBHOOK_URL: must be an http(s) URL (got something that is not a URL)',
      'ALERT_SLACK_WEBHOOK_URL: must be an http(s) URL (got something that is not a URL)',
      'CLOCK_URL: must be an http(s) URL (got a URL with scheme ftp:)',
    ]);
    expect(problems.join('\n')).not.toContain(secretish);
  });

  it('error: a URL of the wrong kind says which kind it got, not the URL', () => {
    const problems = problemsOf({ ...validEnv(), DATABASE_URL: 'mysql://root:hunter2@db/x' });
    expect(problems).toEqual(['DATABASE_URL: must be a postgres:// URL (got a URL with scheme mysql:)']);
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  it('error: an RPC URL that is not a URL names its variable', () => {
    expect(problemsOf({ ...validEnv(), RPC_URL_11155111: 'nonsense' })).toEqual([
      'RPC_URL_11155111: 1 entry is not an http(s) or ws(s) URL',
      'RPC_URL_11155111: is required because store st_a has wallets on chain 11155111',
    ]);
  });

  it('error: the commands that read one or two variables name a bad one too', () => {
    expect(() => loadDatabaseUrl({ DATABASE_URL: 'nonsense' })).toThrow(
      'DATABASE_URL: must be a postgres:// URL (got something that is not a URL)',
    );
    expect(() => loadQueueSettings({ REDIS_URL: 'nonsense' })).toThrow(
      'REDIS_URL: must be a redis:// or rediss:// URL (got something that is not a URL)',
    );
  });

  it('behavior: inspectConfig keeps the parts that parsed when others did not (for the doctor)', () => {
    const bad = inspectConfig({ ...validEnv(), REDIS_URL: 'nonsense', CHAINS_FILE: join(dir, 'none.json') });
    expect(bad.config).toBeUndefined();
    expect(bad.problems.map((p) => p.split(':')[0])).toEqual(['REDIS_URL', 'CHAINS_FILE']);
    expect(bad.usable).toMatchObject({
      databaseUrl: 'postgres://u@127.0.0.1:5432/db',
      redisUrl: undefined,
      svcBaseUrl: 'http://127.0.0.1:9000',
      chains: undefined,
    });
    expect(bad.usable.stores.map((s) => s.storeId)).toEqual(['st_a']);
    expect([...bad.usable.rpcUrls.keys()]).toEqual([11155111]);
    const good = inspectConfig(validEnv());
    expect(good.problems).toEqual([]);
    expect(good.config?.redisUrl).toBe('redis://127.0.0.1:6379');
  });

  it('error: RECON_CRON is read by the cron parser the scheduler uses: an impossible field is refused with its reason', () => {
    // Only the number of fields used to be checked, so "61 * * * *" passed and failed later, in BullMQ.
    expect(problemsOf({ ...validEnv(), RECON_CRON: '61 * * * *' })).toEqual([
      'RECON_CRON: must be a cron expression of 5 or 6 fields (UTC), e.g. "0 1 * * *": Constraint error, got value 61 expected range 0-59',
    ]);
    for (const bad of [
      '0 25 * * *',
      '0 1 * * 8',
      '0 1 32 * *',
      '0 1 * * frieday',
      '* * * *',
      '0 0 1 * * * *',
    ])
      expect(problemsOf({ ...validEnv(), RECON_CRON: bad })).toEqual([
        expect.stringMatching(/^RECON_CRON: /),
      ]);
    for (const good of ['0 1 * * *', '15 0 * * *', '0 0 1 * * *', '*/30 2-4 * * mon-fri', '0 1 1,15 * *'])
      expect(loadConfig({ ...validEnv(), RECON_CRON: good }).reconCron).toBe(good);
  });
});
