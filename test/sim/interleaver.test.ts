import { describe, expect, it } from 'vitest';
import { createInterleaver } from '../../sim/interleaver.ts';

/**
 * The seeded scheduler of the two workers' statements (sim/interleaver.ts): the seed alone orders
 * them, and a statement that waits for the other worker (a lock) does not stop the world.
 */
async function play(seed: string): Promise<string[]> {
  const interleaver = createInterleaver(seed, { lockWaiters: async () => 0 });
  const order: string[] = [];
  const worker = async (w: number) => {
    interleaver.running(w, true);
    for (let i = 0; i < 12; i++) {
      await interleaver.turn(w, async () => {
        order.push(`${w}.${i}`);
        // As a round trip to PostgreSQL: the other worker's work moves meanwhile, unless it waits its turn.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      });
    }
    interleaver.running(w, false);
  };
  await Promise.all([worker(0), worker(1)]);
  return order;
}

describe('interleaver', () => {
  it('behavior: the same seed orders two workers the same way whatever the statements take; another seed differently', async () => {
    // Slow statements are not blocked ones: only PostgreSQL's lock waits let the other worker on.
    const [a, b, c] = [await play('7'), await play('7'), await play('8')];
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    // Each worker's own statements stay in its order, and the two are interleaved, not one after the other.
    for (const w of ['0', '1']) {
      const own = a.filter((s) => s.startsWith(`${w}.`));
      expect(own).toEqual(Array.from({ length: 12 }, (_, i) => `${w}.${i}`));
    }
    const switches = a.filter((s, i) => i > 0 && s[0] !== a[i - 1]?.[0]).length;
    expect(switches).toBeGreaterThan(3);
  });

  it('behavior: a statement waiting for the other worker is let through, and the other goes on', async () => {
    // As PostgreSQL's pg_stat_activity: worker 0's statement waits for the lock until worker 1 frees it.
    let waitingForLock = 0;
    const interleaver = createInterleaver('1', { lockWaiters: async () => waitingForLock });
    let release: () => void = () => {};
    const lock = new Promise<void>((resolve) => {
      release = () => {
        waitingForLock = 0;
        resolve();
      };
    });
    const order: string[] = [];
    interleaver.running(0, true);
    interleaver.running(1, true);
    const waiter = (async () => {
      // Worker 0's statement waits for a lock worker 1 holds until its third statement.
      await interleaver.turn(0, async () => {
        waitingForLock = 1;
        await lock;
        order.push('0 got the lock');
      });
      interleaver.running(0, false);
    })();
    const holder = (async () => {
      for (let i = 0; i < 3; i++)
        await interleaver.turn(1, async () => {
          order.push(`1.${i}`);
          if (i === 2) release();
        });
      interleaver.running(1, false);
    })();
    await Promise.all([waiter, holder]);
    expect(order).toEqual(['1.0', '1.1', '1.2', '0 got the lock']);
    expect(interleaver.stats().blocked).toBeGreaterThan(0);
  });
});
