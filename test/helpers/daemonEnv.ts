import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../src/config/loadConfig.ts';

/**
 * The environment a `stablebooks` child process needs to run against a test pipeline's config:
 * STORES_FILE and CHAINS_FILE written to a temp folder, secrets in their own variables.
 */
export function daemonEnv(config: Config, overrides: Record<string, string> = {}): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-daemon-env-'));
  const storesFile = join(dir, 'stores.json');
  const chainsFile = join(dir, 'chains.json');
  const secrets: Record<string, string> = {};
  writeFileSync(
    storesFile,
    JSON.stringify(
      config.stores.map((s, i) => {
        secrets[`SVC_SECRET_${i}`] = s.apiSecret;
        return {
          store_id: s.storeId,
          business_id: s.businessId,
          api_key: s.apiKey,
          api_secret_env: `SVC_SECRET_${i}`,
          signed_response: s.signedResponse,
          wallets: Object.fromEntries([...s.wallets].map(([chain, w]) => [String(chain), w])),
        };
      }),
    ),
  );
  writeFileSync(
    chainsFile,
    JSON.stringify(
      config.chains
        .chains()
        .filter((c) => config.rpcUrls.has(c.chainId))
        .map((c) => ({
          chain_id: c.chainId,
          tokens: Object.fromEntries(
            c.tokens.map((t) => [t.symbol, { address: t.address, decimals: t.decimals }]),
          ),
        })),
    ),
  );
  return {
    DATABASE_URL: config.databaseUrl,
    REDIS_URL: config.redisUrl,
    SVC_BASE_URL: config.svcBaseUrl,
    STORES_FILE: storesFile,
    CHAINS_FILE: chainsFile,
    ENCRYPTION_KEY: config.encryptionKey.toString('base64'),
    PORT: String(config.port),
    QUEUE_PREFIX: config.queuePrefix,
    POLL_INTERVAL_SCALE: String(config.pollIntervalScale),
    LOG_LEVEL: 'warn',
    ...Object.fromEntries([...config.rpcUrls].map(([id, urls]) => [`RPC_URL_${id}`, urls.join(',')])),
    ...secrets,
    ...overrides,
  };
}
