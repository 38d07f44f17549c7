import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.ts';
import { loadConfig, secretValues } from '../../../src/config/loadConfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'sb-alert-config-'));
const storesFile = join(dir, 'stores.json');
writeFileSync(
  storesFile,
  JSON.stringify([
    {
      store_id: 'st_a',
      business_id: 'biz_1',
      api_key: 'pk_a',
      api_secret_env: 'SVC_SECRET_A',
      signed_response: true,
      wallets: { '11155111': { merchant: `0x${'a'.repeat(40)}`, custody: `0x${'b'.repeat(40)}` } },
    },
  ]),
);

function env(extra: Record<string, string>): Record<string, string | undefined> {
  return {
    DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    SVC_BASE_URL: 'http://127.0.0.1:9000',
    STORES_FILE: storesFile,
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    SVC_SECRET_A: 'secret-of-store-a',
    RPC_URL_11155111: 'http://127.0.0.1:8545',
    ...extra,
  };
}

function problemsOf(e: Record<string, string | undefined>): string[] {
  try {
    loadConfig(e);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

describe('alert config', () => {
  it('behavior: defaults; routes file parsed; the secrets are scrubbed values', () => {
    const defaults = loadConfig(env({}));
    expect(defaults).toMatchObject({ alertRemindMs: 60 * 60_000, alertChainLagBlocks: 50 });
    expect(defaults.alertRoutes).toBeUndefined();
    const routes = join(dir, 'routes.json');
    writeFileSync(routes, JSON.stringify({ critical: ['slack'] }));
    const config = loadConfig(
      env({
        ALERT_WEBHOOK_URL: 'http://127.0.0.1:9/alerts',
        ALERT_WEBHOOK_SECRET: 'alert-secret-0123456789',
        ALERT_SLACK_WEBHOOK_URL: 'https://hooks.example/services/T0/B0/XYZ',
        ALERT_ROUTES_FILE: routes,
        ALERT_REMIND_MINUTES: '15',
        ALERT_CHAIN_LAG_BLOCKS: '10',
      }),
    );
    expect(config).toMatchObject({
      alertRoutes: { critical: ['slack'] },
      alertRemindMs: 15 * 60_000,
      alertChainLagBlocks: 10,
    });
    expect(secretValues(config)).toEqual(
      expect.arrayContaining(['alert-secret-0123456789', 'https://hooks.example/services/T0/B0/XYZ']),
    );
  });

  it('error: a webhook URL without its secret, a bad routes file', () => {
    const routes = join(dir, 'bad-routes.json');
    writeFileSync(routes, JSON.stringify({ critical: ['pager'] }));
    const problems = problemsOf(
      env({ ALERT_WEBHOOK_URL: 'http://127.0.0.1:9/alerts', ALERT_ROUTES_FILE: routes }),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^ALERT_ROUTES_FILE: critical\.0: /),
      'ALERT_WEBHOOK_SECRET: is required because ALERT_WEBHOOK_URL is set (make one with: openssl rand -hex 32)',
    ]);
  });
});
