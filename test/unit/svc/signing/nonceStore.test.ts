import { describe, expect, test } from 'vitest';
import { createManualClock } from '../../../../src/clock.ts';
import { createMemoryNonceStore } from '../../../../src/svc/signing/nonceStore.ts';

const start = new Date('2023-11-14T22:13:20Z');

describe('createMemoryNonceStore', () => {
  test('behavior: first claim succeeds, second within TTL is refused', async () => {
    const store = createMemoryNonceStore(createManualClock(start));
    expect(await store.claim('request:ak:n-1', 60)).toBe(true);
    expect(await store.claim('request:ak:n-1', 60)).toBe(false);
  });

  test('behavior: keys are independent', async () => {
    const store = createMemoryNonceStore(createManualClock(start));
    expect(await store.claim('request:ak:n-1', 60)).toBe(true);
    expect(await store.claim('request:ak:n-2', 60)).toBe(true);
    expect(await store.claim('webhook:n-1', 60)).toBe(true);
  });

  test('behavior: forgets a nonce once its TTL has passed (manual clock)', async () => {
    const clock = createManualClock(start);
    const store = createMemoryNonceStore(clock);
    expect(await store.claim('k', 60)).toBe(true);
    clock.advance(59_999);
    expect(await store.claim('k', 60)).toBe(false);
    clock.advance(1);
    expect(await store.claim('k', 60)).toBe(true);
    // The new claim runs its own TTL.
    clock.advance(59_000);
    expect(await store.claim('k', 60)).toBe(false);
  });

  test('behavior: expired entries are swept so memory stays bounded', async () => {
    const clock = createManualClock(start);
    const store = createMemoryNonceStore(clock);
    for (let i = 0; i < 1000; i++) expect(await store.claim(`k-${i}`, 10)).toBe(true);
    expect(store.size()).toBe(1000);
    clock.advance(10_000);
    expect(await store.claim('fresh', 10)).toBe(true);
    expect(store.size()).toBe(1);
  });

  test('error: a non-positive TTL is refused', async () => {
    const store = createMemoryNonceStore(createManualClock(start));
    await expect(store.claim('k', 0)).rejects.toThrow(RangeError);
    await expect(store.claim('k', Number.NaN)).rejects.toThrow(RangeError);
  });
});
