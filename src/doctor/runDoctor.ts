import { Redis } from 'ioredis';
import pg from 'pg';
import { createPublicClient, fallback, http } from 'viem';
import { inspectConfig } from '../config/loadConfig.ts';
import type { Token } from '../ledger/accounts.ts';
import { createSvcClient } from '../svc/client.ts';
import { databaseRoleWarning } from './databaseRole.ts';

/** One line of `stablebooks doctor`: what was checked, whether it passed, and what was seen. */
export interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  /** Passed, but with something to fix (printed WARN; the exit status stays 0). */
  warning?: true;
}

/** What a check found: its detail line, and whether that detail is a warning. */
type Finding = string | { detail: string; warning: true };

const TIMEOUT_MS = 5000;

/** The one ERC-20 function the token check calls. */
const decimalsAbi = [
  { type: 'function', name: 'decimals', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint8' }] },
] as const;

/**
 * Checks that this installation can work: configuration, PostgreSQL, Redis, every RPC URL (its
 * chain id must be the one its variable names), the decimals of every registry token of a chain
 * with RPC URLs against its contract's decimals(), and each store's credentials against the
 * service (GET /v1/test/ping, which proves the api_key, the secret and the signing). A bad
 * variable fails the config line naming it and the checks that need it ("not checked"); every
 * other check still runs, so one run shows everything there is to fix.
 */
export async function runDoctor(env: Record<string, string | undefined>): Promise<DoctorCheck[]> {
  // Not loadConfig: one bad variable must not hide the checks that do not depend on it.
  const { problems, config, usable } = inspectConfig(env);
  const { databaseUrl, redisUrl, svcBaseUrl } = usable;
  const checks: Array<Promise<DoctorCheck>> = [
    ...(config
      ? [
          Promise.resolve({
            name: 'config',
            ok: true,
            detail: `${config.stores.length} store(s), RPC for chain(s) ${[...config.rpcUrls.keys()].join(', ') || 'none'}`,
          }),
        ]
      : problems.map((p) => Promise.resolve({ name: 'config', ok: false, detail: p }))),
    databaseUrl === undefined
      ? notChecked('postgres', 'DATABASE_URL')
      : check('postgres', () => checkPostgres(databaseUrl)),
    redisUrl === undefined ? notChecked('redis', 'REDIS_URL') : check('redis', () => checkRedis(redisUrl)),
  ];
  for (const [chainId, urls] of usable.rpcUrls) {
    urls.forEach((url, i) => {
      checks.push(
        check(`rpc ${chainId}${urls.length > 1 ? ` #${i + 1}` : ''}`, () => checkRpc(chainId, url)),
      );
    });
    if (usable.chains) {
      checks.push(...checkTokenDecimals(chainId, urls, usable.chains.chain(chainId)?.tokens ?? []));
    } else {
      checks.push(notChecked(`token ${chainId}`, 'CHAINS_FILE'));
    }
  }
  for (const store of usable.stores) {
    if (svcBaseUrl === undefined) {
      checks.push(notChecked(`store ${store.storeId}`, 'SVC_BASE_URL'));
      continue;
    }
    checks.push(
      check(`store ${store.storeId}`, async () => {
        const client = createSvcClient({
          baseUrl: svcBaseUrl,
          credentials: store,
          retry: { maxAttempts: 2 },
          timeouts: { defaultMs: TIMEOUT_MS },
        });
        const res = await client.ping();
        return `ping answered ${res.pong}${store.signedResponse ? ', response signature verified' : ''}`;
      }),
    );
  }
  return Promise.all(checks);
}

/** A check that cannot run because the variable it needs is bad (its config line says how). */
function notChecked(name: string, variable: string): Promise<DoctorCheck> {
  return Promise.resolve({ name, ok: false, detail: `not checked: ${variable} is not usable (see config)` });
}

async function check(name: string, fn: () => Promise<Finding>): Promise<DoctorCheck> {
  try {
    const found = await fn();
    return typeof found === 'string' ? { name, ok: true, detail: found } : { name, ok: true, ...found };
  } catch (err) {
    const message = err instanceof Error ? err.message || err.name : String(err);
    return { name, ok: false, detail: message.split('\n')[0] ?? 'failed' };
  }
}

async function checkPostgres(url: string): Promise<Finding> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: TIMEOUT_MS });
  await client.connect();
  try {
    const { rows } = await client.query<{ v: string }>(`select current_setting('server_version') as v`);
    const reachable = `reachable, PostgreSQL ${rows[0]?.v}`;
    const warning = await databaseRoleWarning(client);
    return warning === undefined ? reachable : { detail: `${reachable}; ${warning}`, warning: true };
  } finally {
    await client.end();
  }
}

async function checkRedis(url: string): Promise<string> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    const pong = await redis.ping();
    const info = await redis.info('server');
    const version = /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
    return `reachable (${pong}), Redis ${version}`;
  } finally {
    redis.disconnect();
  }
}

async function checkRpc(expected: number, url: string): Promise<string> {
  const client = createPublicClient({ transport: http(url, { timeout: TIMEOUT_MS, retryCount: 0 }) });
  const actual = await client.getChainId();
  if (actual !== expected)
    throw new Error(`answers chain id ${actual}, but RPC_URL_${expected} says ${expected}`);
  const block = await client.getBlockNumber();
  return `chain id ${actual}, head block ${block}`;
}

/**
 * One check per registry token of the chain: the decimals the registry (defaults and CHAINS_FILE)
 * gives it must be those its contract's decimals() returns, or every amount of that token would
 * be booked in the wrong unit (the ledger refuses postings in decimals other than an account's).
 * Read through the chain's RPC URLs as a fallback list, after checking the chain id they answer.
 */
function checkTokenDecimals(chainId: number, urls: string[], tokens: Token[]): Array<Promise<DoctorCheck>> {
  if (tokens.length === 0) return [];
  const client = createPublicClient({
    transport: fallback(urls.map((url) => http(url, { timeout: TIMEOUT_MS, retryCount: 0 }))),
  });
  const answered = client.getChainId();
  answered.catch(() => {}); // each token's check reports it
  return tokens.map((token) =>
    check(`token ${chainId} ${token.symbol}`, async () => {
      const where = `chain ${chainId} ${token.symbol} ${token.address}`;
      let onChain: number;
      try {
        const actual = await answered;
        if (actual !== chainId) throw new Error(`the RPC answers chain id ${actual}`);
        onChain = await client.readContract({
          address: token.address,
          abi: decimalsAbi,
          functionName: 'decimals',
        });
      } catch (err) {
        throw new Error(`${where}: decimals() could not be read: ${shortMessage(err)}`);
      }
      if (onChain !== token.decimals) {
        throw new Error(
          `${where}: the registry says ${token.decimals} decimals, decimals() on chain says ${onChain}; ` +
            "fix the token's decimals in CHAINS_FILE",
        );
      }
      return `${token.address}: decimals() ${onChain}, as the registry says`;
    }),
  );
}

function shortMessage(err: unknown): string {
  const short = (err as { shortMessage?: unknown }).shortMessage;
  const message = typeof short === 'string' ? short : err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? 'failed';
}
