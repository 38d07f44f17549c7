import {
  BaseError,
  type Chain,
  createPublicClient,
  createTransport,
  defineChain,
  type EIP1193RequestFn,
  fallback,
  HttpRequestError,
  http,
  type PublicClient,
  RpcRequestError,
  type Transport,
  webSocket,
} from 'viem';
import type { ChainInfo } from '../config/chainRegistry.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Metrics } from '../metrics/metrics.ts';

/**
 * viem clients for the chains the daemon reads (docs/accounting.md, "Payments, payouts and the chain").
 *
 * Glossary
 * - attempt: one JSON-RPC request sent to one URL; what the metrics count. With batching, each
 *   logical request inside a batch is its own attempt;
 * - fallback: the URLs of a chain in order; a request that fails on one goes to the next, and when
 *   all failed the whole round is retried with exponential backoff (viem's `fallback`);
 * - rate limited: an HTTP 429 or a JSON-RPC error saying so (code 429, -32005, -32007, or a
 *   message "rate limit" / "too many requests"): always retried with backoff.
 *
 * RPC URLs often carry an API key in their path or query, so a URL never appears in a metric label
 * or a log line: errors leaving this module have every URL replaced by its host (`redactRpcUrl`).
 */
export interface ChainRpc {
  chainId: number;
  /** Fallback over every URL, batched, with retries: what the indexer reads through. */
  client: PublicClient;
  /** One client per URL, in the same order: a second opinion before believing a reorg. */
  perUrl: PublicClient[];
  /** The URLs themselves: secrets-ish, never log them (use `hosts`). */
  urls: string[];
  /** What a log line may say about each URL. */
  hosts: string[];
}

export interface ChainRpcOptions {
  /** Per request to one URL, in ms. Default 10,000. */
  timeoutMs?: number;
  /** Retries of a failed round over all URLs (or of one URL for perUrl). Default 4. */
  retryCount?: number;
  /** Base of the exponential backoff between retries, in ms. Default 250. */
  retryDelayMs?: number;
}

/** Every chain that has RPC URLs in the config, by EIP-155 id. */
export function createChainRpcs(
  config: Pick<Config, 'rpcUrls' | 'chains'>,
  metrics: Metrics,
  options: ChainRpcOptions = {},
): Map<number, ChainRpc> {
  const out = new Map<number, ChainRpc>();
  for (const [chainId, urls] of config.rpcUrls) {
    const info = config.chains.chain(chainId) ?? { chainId, name: `chain ${chainId}` };
    out.set(chainId, createChainRpc(info, urls, metrics, options));
  }
  return out;
}

export function createChainRpc(
  chainInfo: Pick<ChainInfo, 'chainId' | 'name'>,
  urls: string[],
  metrics: Metrics,
  options: ChainRpcOptions = {},
): ChainRpc {
  if (urls.length === 0)
    throw new Error(`RPC_URL_${chainInfo.chainId}: no RPC URL for chain ${chainInfo.chainId}`);
  const retryCount = options.retryCount ?? 4;
  const retryDelay = options.retryDelayMs ?? 250;
  const timeout = options.timeoutMs ?? 10_000;
  const chain: Chain = defineChain({
    id: chainInfo.chainId,
    name: chainInfo.name,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    // viem wants a URL here; the transports below carry the real ones.
    rpcUrls: { default: { http: [] } },
  });
  const transports = urls.map((url) =>
    instrumented(url, chainInfo.chainId, metrics, { timeout, retryCount, retryDelay }),
  );
  const client = createPublicClient({
    chain,
    transport: fallback(transports, { retryCount, retryDelay }),
  }) as PublicClient;
  const perUrl = transports.map((transport) => createPublicClient({ chain, transport }) as PublicClient);
  return { chainId: chainInfo.chainId, client, perUrl, urls: [...urls], hosts: urls.map(redactRpcUrl) };
}

/**
 * One URL's transport: http (batched) or WebSocket, wrapped so that each attempt is measured, a
 * rate limit spelled only in the message becomes retryable, an eth_getLogs answer that is not a
 * list fails (RpcMalformedResultError), and errors lose the URL.
 */
function instrumented(
  url: string,
  chainId: number,
  metrics: Metrics,
  defaults: { timeout: number; retryCount: number; retryDelay: number },
): Transport {
  const redacted = redactRpcUrl(url);
  const inner: Transport = /^wss?:\/\//i.test(url)
    ? webSocket(url, { timeout: defaults.timeout })
    : http(url, { batch: { batchSize: 100 }, timeout: defaults.timeout });
  const labels = { chain_id: String(chainId) };
  return (params) => {
    const transport = inner({ ...params, retryCount: 0 });
    const request = (async (args, options) => {
      const method = typeof args.method === 'string' ? args.method : 'unknown';
      const stop = metrics.rpcRequestSeconds.startTimer({ ...labels, method });
      try {
        const result = await transport.request(args, options);
        if (method === 'eth_getLogs' && !Array.isArray(result)) {
          throw new RpcMalformedResultError(method, result, redacted);
        }
        metrics.rpcRequests.inc({ ...labels, method, outcome: 'ok' });
        return result;
      } catch (err) {
        const outcome = rpcErrorOutcome(err);
        metrics.rpcRequests.inc({ ...labels, method, outcome });
        scrubUrl(err, url, redacted);
        if (outcome === 'rate_limited' && !hasRetryableRateLimitCode(err)) {
          throw new RpcRateLimitedError(method, redacted, err);
        }
        throw err;
      } finally {
        stop();
      }
    }) as EIP1193RequestFn;
    return createTransport(
      {
        key: 'instrumented',
        name: `instrumented ${redacted}`,
        request,
        retryCount: params.retryCount ?? defaults.retryCount,
        retryDelay: defaults.retryDelay,
        timeout: params.timeout ?? defaults.timeout,
        type: 'instrumented',
      },
      transport.value,
    );
  };
}

/**
 * A rate limit the node said in words only: code 429 makes viem's retry (and fallback) treat it
 * like an HTTP 429, with backoff.
 */
export class RpcRateLimitedError extends BaseError {
  readonly code = 429;
  constructor(method: string, host: string, cause: unknown) {
    super(`${method}: rate limited by ${host}`, {
      cause: cause instanceof Error ? cause : undefined,
      name: 'RpcRateLimitedError',
    });
  }
}

/**
 * An answer that is not one: eth_getLogs must answer a list, and a node that is behind or half
 * synced (a lagging fallback, one node behind a load balancer) may answer null instead. Read as
 * "no logs", it would let the cursor pass payments that exist, so it is an error like any other:
 * the fallback asks the next URL, viem retries the round (the error has no code, so it is
 * retryable), and when every attempt fails the pass ends with the cursor where it was.
 */
export class RpcMalformedResultError extends BaseError {
  constructor(method: string, result: unknown, host?: string) {
    const answered = result === null ? 'null' : Array.isArray(result) ? 'a list' : typeof result;
    super(
      `${method}: ${host ?? 'the node'} answered ${answered}, not a list; retry (another URL may have it)`,
      {
        name: 'RpcMalformedResultError',
      },
    );
  }
}

export type RpcOutcome = 'ok' | 'error' | 'rate_limited' | 'timeout';

/** How a failed attempt is counted. */
export function rpcErrorOutcome(err: unknown): Exclude<RpcOutcome, 'ok'> {
  if (isRateLimitError(err)) return 'rate_limited';
  if (someInChain(err, (e) => e.name === 'TimeoutError')) return 'timeout';
  return 'error';
}

const RATE_LIMIT_MESSAGE = /rate.?limit|too many requests/i;
const RATE_LIMIT_CODES = new Set([429, -32005, -32007]);

/** HTTP 429, a JSON-RPC code providers use for rate limits, or a message saying so, anywhere in the cause chain. */
export function isRateLimitError(err: unknown): boolean {
  return someInChain(err, (e) => {
    if (typeof e.code === 'number' && RATE_LIMIT_CODES.has(e.code)) return true;
    if (e instanceof HttpRequestError && e.status === 429) return true;
    if (e instanceof RpcRequestError && RATE_LIMIT_MESSAGE.test(e.shortMessage)) return true;
    return typeof e.message === 'string' && RATE_LIMIT_MESSAGE.test(e.message);
  });
}

function hasRetryableRateLimitCode(err: unknown): boolean {
  return someInChain(err, (e) => e.code === 429 || e.code === -32005 || e.code === -32007);
}

type ErrorLike = Error & { code?: unknown; cause?: unknown };

function someInChain(err: unknown, test: (e: ErrorLike) => boolean): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    if (test(current as ErrorLike)) return true;
    current = (current as ErrorLike).cause;
  }
  return false;
}

/** What a log line may show of an RPC URL: scheme and host, never the path or query (API keys live there). */
export function redactRpcUrl(url: string): string {
  try {
    const u = new URL(url);
    const hidden = (u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.username !== '';
    return `${u.protocol}//${u.host}${hidden ? '/…' : ''}`;
  } catch {
    return '(unparseable RPC URL)';
  }
}

const SCRUBBED_FIELDS = ['message', 'shortMessage', 'details', 'url', 'stack'] as const;

/** Replaces the URL in every message of the error and its causes, in place (keeps the error's type and status). */
export function scrubUrl(err: unknown, url: string, replacement: string): void {
  const forms = urlForms(url);
  const scrub = (s: string) => forms.reduce((acc, form) => acc.split(form).join(replacement), s);
  let current: unknown = err;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const e = current as unknown as Record<string, unknown>;
    for (const field of SCRUBBED_FIELDS) {
      const value = e[field];
      if (typeof value === 'string') {
        try {
          e[field] = scrub(value);
        } catch {
          // A read-only property: leave it; the message fields viem uses are writable.
        }
      }
    }
    if (Array.isArray(e.metaMessages)) {
      e.metaMessages = e.metaMessages.map((m) => (typeof m === 'string' ? scrub(m) : m));
    }
    current = e.cause;
  }
}

function urlForms(url: string): string[] {
  const forms = new Set([url, url.replace(/\/+$/, '')]);
  try {
    const u = new URL(url);
    forms.add(u.toString());
    u.username = '';
    u.password = '';
    forms.add(u.toString());
    forms.add(u.toString().replace(/\/+$/, ''));
  } catch {
    // not a URL: only the raw form
  }
  // Longest first, so a shorter form never leaves the tail of a longer one behind.
  return [...forms].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}
