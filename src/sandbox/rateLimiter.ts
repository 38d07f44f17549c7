import type { Clock } from '../clock.ts';

/** A token bucket per API key: `burst` requests at once, refilled at `perSecond`. */
export interface RateLimiter {
  /** Takes a token; returns 0 when allowed, else the milliseconds until one is free. */
  take(key: string, limit: { requests_per_second: number; burst: number }): number;
}

export function createRateLimiter(clock: Clock): RateLimiter {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key, limit) {
      const now = clock.now().getTime();
      const bucket = buckets.get(key) ?? { tokens: limit.burst, at: now };
      bucket.tokens = Math.min(
        limit.burst,
        bucket.tokens + ((now - bucket.at) / 1000) * limit.requests_per_second,
      );
      bucket.at = now;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - bucket.tokens) / limit.requests_per_second) * 1000);
    },
  };
}
