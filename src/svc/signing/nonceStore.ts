import type { Clock } from '../../clock.ts';

/**
 * Replay protection: remembers each nonce for a while so a second use inside that window is refused.
 *
 * `claim(key, ttlSeconds)` is an atomic test-and-set: true when the key was unused (or its earlier
 * claim has expired) and is now taken for `ttlSeconds`; false when it was already claimed and that
 * claim has not expired. Keys are namespaced by the caller (`request:`, `response:`, `webhook:`).
 * A shared implementation (Redis `SET key 1 NX EX ttl`) must keep the same semantics.
 */
export interface NonceStore {
  claim(key: string, ttlSeconds: number): Promise<boolean>;
}

/** How often, at most, the memory store walks its map to drop expired claims. */
const SWEEP_INTERVAL_MS = 1_000;

/**
 * In-process NonceStore for tests, the sandbox and single-process use. Time comes from the given
 * clock. Expired claims are swept (at most once per second of clock time, on the next claim), so
 * the map holds only claims younger than their TTL plus one sweep interval: memory stays bounded by
 * the claim rate times the longest TTL. `size()` reports the entries held, for tests.
 */
export function createMemoryNonceStore(clock: Clock): NonceStore & { size(): number } {
  const expiresAtMs = new Map<string, number>();
  let lastSweepMs = Number.NEGATIVE_INFINITY;

  const sweep = (nowMs: number): void => {
    for (const [key, expiry] of expiresAtMs) {
      if (expiry <= nowMs) expiresAtMs.delete(key);
    }
    lastSweepMs = nowMs;
  };

  return {
    claim: async (key, ttlSeconds) => {
      if (!Number.isFinite(ttlSeconds) || ttlSeconds <= 0) {
        throw new RangeError(`nonce store: ttlSeconds must be a positive number, got ${ttlSeconds}`);
      }
      const nowMs = clock.now().getTime();
      // A clock moved backwards (a test setting it) also triggers a sweep rather than postponing it.
      if (nowMs - lastSweepMs >= SWEEP_INTERVAL_MS || nowMs < lastSweepMs) sweep(nowMs);
      const expiry = expiresAtMs.get(key);
      if (expiry !== undefined && expiry > nowMs) return false;
      expiresAtMs.set(key, nowMs + ttlSeconds * 1000);
      return true;
    },
    size: () => expiresAtMs.size,
  };
}
