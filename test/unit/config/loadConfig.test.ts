import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { loadConfig, loadDatabaseUrl } from '../../../src/config/loadConfig.ts';

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

  it('behavior: migrate needs only DATABASE_URL', () => {
    expect(loadDatabaseUrl({ DATABASE_URL: 'postgresql://x@h/d' })).toBe('postgresql://x@h/d');
    expect(() => loadDatabaseUrl({})).toThrow(/DATABASE_URL: is required but not set/);
  });
});
