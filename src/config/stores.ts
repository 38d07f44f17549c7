import { readFileSync } from 'node:fs';
import { z } from 'zod';

/**
 * STORES_FILE: the merchant's stores at the service. The file names the env var that holds each
 * api_secret instead of holding it, so the file can live in version control.
 */
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');

export const storeFileEntrySchema = z
  .object({
    store_id: z.string().min(1),
    business_id: z.string().min(1),
    api_key: z.string().min(1),
    /** Name of the environment variable holding this store's api_secret. */
    api_secret_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
    /** Whether the store has response signing on: then an unsigned response is an error. */
    signed_response: z.boolean().default(false),
    /** Per EIP-155 chain id: the merchant wallet at the service (tx_to) and the custody wallet. */
    wallets: z
      .record(
        z.string().regex(/^\d+$/, 'chain keys are EIP-155 chain ids'),
        z.object({ merchant: address, custody: address }),
      )
      .default({}),
    /**
     * The currency the merchant's books close in (ISO 4217 code): every posting is valued in it
     * (docs/accounting.md, "Valuation").
     */
    functional_currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code in capitals, e.g. EUR')
      .default('USD'),
    /**
     * Par policy, off unless chosen: a fixed rate (units of the functional currency per coin) used
     * when neither the intent nor an imported rate values a posting, e.g. {"USDT": "1", "USDC": "1"}.
     */
    par: z
      .partialRecord(
        z.enum(['USDT', 'USDC']),
        z
          .string()
          .regex(/^\d+(?:\.\d+)?$/, 'must be a plain decimal string, e.g. "1"')
          .refine((v) => /[1-9]/.test(v), 'must be above zero'),
      )
      .default({}),
  })
  .strict();

export const storesFileSchema = z.array(storeFileEntrySchema).min(1, 'lists no store');

export interface StoreConfig {
  storeId: string;
  businessId: string;
  apiKey: string;
  /** Secret: never logged (src/logging redacts it by value and by key). */
  apiSecret: string;
  signedResponse: boolean;
  wallets: Map<number, { merchant: `0x${string}`; custody: `0x${string}` }>;
  /** ISO 4217 code the books are valued in (default USD). */
  functionalCurrency: string;
  /** Par rates per token symbol, as exact decimal strings; empty when the policy is off. */
  par: ReadonlyMap<string, string>;
}

/** A store's wallets as STORES_FILE lists them, without its credentials. */
export type StoreWallets = Pick<StoreConfig, 'storeId' | 'wallets'>;

/** Reads and validates STORES_FILE, resolving each secret from the env var it names. */
export function loadStores(
  path: string,
  env: Record<string, string | undefined>,
): { stores: StoreConfig[]; problems: string[] } {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : 'not valid JSON';
    return { stores: [], problems: [`STORES_FILE: ${path}: ${why}`] };
  }
  const parsed = storesFileSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      stores: [],
      problems: parsed.error.issues.map((i) => `STORES_FILE: ${path}: ${formatPath(i.path)}: ${i.message}`),
    };
  }
  const problems: string[] = roleConflicts(parsed.data);
  const stores: StoreConfig[] = [];
  const seen = new Set<string>();
  for (const entry of parsed.data) {
    if (seen.has(entry.store_id)) problems.push(`STORES_FILE: store ${entry.store_id} is listed twice`);
    seen.add(entry.store_id);
    const secret = env[entry.api_secret_env];
    if (!secret) {
      problems.push(
        `STORES_FILE: store ${entry.store_id} names api_secret_env ${entry.api_secret_env}, which is not set`,
      );
      continue;
    }
    const wallets = new Map<number, { merchant: `0x${string}`; custody: `0x${string}` }>();
    for (const [chain, w] of Object.entries(entry.wallets)) {
      wallets.set(Number(chain), {
        merchant: w.merchant as `0x${string}`,
        custody: w.custody as `0x${string}`,
      });
    }
    stores.push({
      storeId: entry.store_id,
      businessId: entry.business_id,
      apiKey: entry.api_key,
      apiSecret: secret,
      signedResponse: entry.signed_response,
      wallets,
      functionalCurrency: entry.functional_currency,
      par: new Map(Object.entries(entry.par)),
    });
  }
  return { stores, problems };
}

/**
 * One line per address that is a merchant wallet (of any store) and a custody wallet (of the same
 * or another store) on one chain. The settlement matcher knows a watched wallet by its address, so
 * it cannot tell which role a transfer is for (custody would win, and every payment into the
 * wallet would go to suspense). Several stores sharing an address in one role is fine (a
 * business's stores share their custody wallet), and so is one address in two roles on two chains.
 */
function roleConflicts(entries: z.infer<typeof storesFileSchema>): string[] {
  const byAddress = new Map<
    string,
    { chainId: string; address: string; merchant: string[]; custody: string[] }
  >();
  for (const entry of entries) {
    for (const [chainId, w] of Object.entries(entry.wallets)) {
      for (const role of ['merchant', 'custody'] as const) {
        const address = w[role].toLowerCase();
        const key = `${chainId}:${address}`;
        const held = byAddress.get(key) ?? { chainId, address, merchant: [], custody: [] };
        if (!held[role].includes(entry.store_id)) held[role].push(entry.store_id);
        byAddress.set(key, held);
      }
    }
  }
  const stores = (ids: string[]) => (ids.length === 1 ? `store ${ids[0]}` : `stores ${ids.join(', ')}`);
  return [...byAddress.values()]
    .filter((a) => a.merchant.length > 0 && a.custody.length > 0)
    .map(
      (a) =>
        `STORES_FILE: chain ${a.chainId}: address ${a.address} is the merchant wallet of ${stores(a.merchant)} ` +
        `and the custody wallet of ${stores(a.custody)}; an address can hold one role only, because transfers ` +
        'are matched by address: give the merchant and the custody wallet different addresses',
    );
}

function formatPath(path: PropertyKey[]): string {
  return path.length === 0
    ? '(top level)'
    : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
}
