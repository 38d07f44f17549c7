import { seededRandom } from '../src/seededRandom.ts';

/**
 * Makes Math.random the seed's own stream until the returned function restores it. The product
 * draws its jitter from Math.random (the poll schedule's, a retry's backoff): in a world those
 * draws must be the seed's too, or the same seed schedules its polls at other times and a failing
 * seed does not replay.
 */
export function seedMathRandom(seed: string): () => void {
  const original = Math.random;
  Math.random = seededRandom(`math:${seed}`);
  return () => {
    Math.random = original;
  };
}
