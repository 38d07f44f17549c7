import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import { runSandbox } from '../../src/sandbox/runSandbox.ts';
import { type SandboxConfig, sandboxConfigSchema } from '../../src/sandbox/sandboxConfig.ts';
import type { SandboxWorld } from '../../src/sandbox/world.ts';
import { createSvcClient, type SvcClient, type SvcClientOptions } from '../../src/svc/client.ts';

export interface TestSandbox {
  url: string;
  world: SandboxWorld;
  config: SandboxConfig;
  /** The project's client for a store (default: the first store), with fast retries. */
  client(storeId?: string, options?: Partial<Omit<SvcClientOptions, 'baseUrl' | 'credentials'>>): SvcClient;
  /** Calls the control API: GET without a body, POST with one; resolves the parsed JSON and status. */
  control<T = unknown>(path: string, body?: unknown): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/** A store of the default test world: production key, auto-payout scope, no webhooks. */
export function testStore(storeId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    store_id: storeId,
    api_key: `pk_${storeId}_${randomBytes(4).toString('hex')}`,
    api_secret: `sk_${storeId}_${randomBytes(16).toString('hex')}`,
    scopes: ['claim_link:auto_payout'],
    ...overrides,
  };
}

/**
 * A whole sandbox on anvil nodes of its own (one per chain), stopped after the calling file when
 * called at its top level (an afterAll registered from inside beforeAll never runs: stop it there).
 * `config` is the stores file (zod input; defaults: two businesses, biz_1 with st_a and st_b,
 * biz_2 with st_c; a high rate limit so tests are not throttled unless they ask).
 */
export async function startTestSandbox(
  options: { config?: Record<string, unknown>; chains?: number[]; seed?: string } = {},
): Promise<TestSandbox> {
  const config = sandboxConfigSchema.parse(
    options.config ?? {
      rate_limit: { requests_per_second: 10_000, burst: 10_000 },
      businesses: [
        { business_id: 'biz_1', stores: [testStore('st_a'), testStore('st_b')] },
        { business_id: 'biz_2', stores: [testStore('st_c')] },
      ],
    },
  );
  const sandbox = await runSandbox({
    config,
    host: '127.0.0.1',
    port: 0,
    chains: options.chains ?? [11155111],
    rpcUrls: new Map(),
    seed: options.seed ?? 'test',
  });
  afterAll(() => sandbox.stop(), 60_000);
  const stores = config.businesses.flatMap((b) => b.stores);
  return {
    url: sandbox.url,
    world: sandbox.world,
    config,
    client(storeId, clientOptions = {}) {
      const store = storeId ? stores.find((s) => s.store_id === storeId) : stores[0];
      if (!store) throw new Error(`no store ${storeId} in the test sandbox`);
      return createSvcClient({
        baseUrl: sandbox.url,
        credentials: {
          apiKey: store.api_key,
          apiSecret: store.api_secret,
          signedResponse: store.signed_response,
        },
        retry: { maxAttempts: 1 },
        ...clientOptions,
      });
    },
    async control<T>(path: string, body?: unknown) {
      const res = await fetch(`${sandbox.url}${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
    },
    stop: () => sandbox.stop(),
  };
}
