import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * The sandbox's world: businesses, their stores and the stores' settings at the "service". This is
 * the service's side of the credentials, so unlike the daemon's STORES_FILE it holds api_secret.
 */
const cidr = z.string().regex(/^[0-9a-fA-F.:]+\/\d{1,3}$/, 'must be CIDR notation such as 10.0.0.0/8');

export const sandboxStoreSchema = z.object({
  store_id: z.string().min(1),
  api_key: z.string().min(1),
  api_secret: z.string().min(16, 'must be at least 16 characters'),
  /** A sandbox API key: rejected on the claim-link routes with 50104. */
  sandbox_key: z.boolean().default(false),
  scopes: z.array(z.string()).default([]),
  ip_allowlist: z.array(cidr).default([]),
  signed_response: z.boolean().default(false),
  checkout_webhook_url: z.string().url().nullable().default(null),
  claim_link_webhook_url: z.string().url().nullable().default(null),
  /** StableCoin values; the store setting that shapes the accepted_stable_coins bitmask. */
  accepted_stable_coins: z
    .array(z.union([z.literal(1), z.literal(2)]))
    .min(1)
    .default([1]),
  /** Overrides the sandbox-wide rate limit for this store's key. */
  rate_limit: z.object({ requests_per_second: z.number().positive(), burst: z.int().positive() }).optional(),
});
export type SandboxStore = z.output<typeof sandboxStoreSchema>;

export const sandboxConfigSchema = z.object({
  environment: z.enum(['test', 'production']).default('test'),
  live_signing_enabled: z.boolean().default(true),
  /** Per API key: a token bucket; beyond it requests answer 40001 with details.retry_after. */
  rate_limit: z
    .object({ requests_per_second: z.number().positive(), burst: z.int().positive() })
    .default({ requests_per_second: 100, burst: 200 }),
  businesses: z
    .array(z.object({ business_id: z.string().min(1), stores: z.array(sandboxStoreSchema).min(1) }))
    .min(1),
});
export type SandboxConfig = z.output<typeof sandboxConfigSchema>;

export function loadSandboxConfig(path: string): SandboxConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(
      `--stores ${path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : 'not valid JSON'}`,
    );
  }
  const parsed = sandboxConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new Error(`--stores ${path}: ${first?.path.join('.') || '(top level)'}: ${first?.message}`);
  }
  return parsed.data;
}

/** One business with one store and fresh random credentials: what `stablebooks sandbox` runs by default. */
export function defaultSandboxConfig(): SandboxConfig {
  return sandboxConfigSchema.parse({
    businesses: [
      {
        business_id: 'biz_sandbox',
        stores: [
          {
            store_id: 'st_sandbox',
            api_key: `pk_test_${randomBytes(8).toString('hex')}`,
            api_secret: `sk_test_${randomBytes(24).toString('base64url')}`,
            scopes: ['claim_link:auto_payout'],
          },
        ],
      },
    ],
  });
}
