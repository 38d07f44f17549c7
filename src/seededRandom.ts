import { createHash } from 'node:crypto';

/**
 * mulberry32: a small seeded generator of numbers in [0, 1), the same sequence for the same seed
 * on every machine (the demo's scenarios, the benchmarks' data). Not for secrets or amounts.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** mulberry32 seeded from a string (its SHA-256's first four bytes). */
export function seededRandom(seed: string): () => number {
  return mulberry32(createHash('sha256').update(seed).digest().readUInt32LE(0));
}
