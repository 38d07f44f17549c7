import { describe, expect, it } from 'vitest';
import { createMicroBatcher, type ItemResult } from '../../../src/batching/microBatcher.ts';

describe('createMicroBatcher', () => {
  it('behavior: items of one turn form one batch; items added while the only slot is busy form the next', async () => {
    const batches: number[][] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const batcher = createMicroBatcher<number, number>({
      run: async (items) => {
        batches.push(items);
        if (batches.length === 1) await gate;
        return items.map((n): ItemResult<number> => ({ ok: true, value: n * 10 }));
      },
      maxBatch: 3,
      maxInFlight: 1,
    });
    const first = [1, 2, 3, 4].map((n) => batcher.add(n));
    await new Promise((r) => setImmediate(r));
    const later = [5, 6].map((n) => batcher.add(n));
    release();
    expect(await Promise.all([...first, ...later])).toEqual([10, 20, 30, 40, 50, 60]);
    // 4 exceeds maxBatch; 5 and 6 waited for the busy slot and joined 4's batch.
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
  });

  it('error: each item gets its own result; a run that throws fails its whole batch only', async () => {
    let calls = 0;
    const batcher = createMicroBatcher<string, string>({
      run: async (items) => {
        calls += 1;
        if (items.includes('boom')) throw new Error('run failed');
        return items.map(
          (s): ItemResult<string> =>
            s === 'bad' ? { ok: false, error: new Error(`bad ${s}`) } : { ok: true, value: s },
        );
      },
      maxBatch: 10,
      maxInFlight: 2,
    });
    const settled = await Promise.allSettled([batcher.add('a'), batcher.add('bad'), batcher.add('c')]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    await expect(batcher.add('boom')).rejects.toThrow('run failed');
    await expect(batcher.add('d')).resolves.toBe('d');
    expect(calls).toBe(3);
  });

  it('behavior: close waits for accepted items and refuses new ones', async () => {
    let done = 0;
    const batcher = createMicroBatcher<number, number>({
      run: async (items) => {
        await new Promise((r) => setTimeout(r, 20));
        done += items.length;
        return items.map((n): ItemResult<number> => ({ ok: true, value: n }));
      },
      maxBatch: 10,
      maxInFlight: 1,
    });
    const pending = [batcher.add(1), batcher.add(2)];
    await batcher.close();
    expect(done).toBe(2);
    expect(await Promise.all(pending)).toEqual([1, 2]);
    await expect(batcher.add(3)).rejects.toThrow(/closed/);
  });
});

describe('createMicroBatcher: results that outlive their batch', () => {
  it('behavior: a pending result holds its caller, not the slot: the next batch runs, and close waits for it', async () => {
    let release: (r: ItemResult<string>) => void = () => {};
    const straggler = new Promise<ItemResult<string>>((r) => {
      release = r;
    });
    const batches: string[][] = [];
    const batcher = createMicroBatcher<string, string>({
      run: async (items) => {
        batches.push(items);
        return items.map((s) => (s === 'slow' ? straggler : { ok: true, value: s }));
      },
      maxBatch: 10,
      maxInFlight: 1,
    });
    const slow = batcher.add('slow');
    const quick = batcher.add('quick');
    await expect(quick).resolves.toBe('quick');
    // The only slot is free although 'slow' is not done: a later item gets a batch of its own.
    await expect(batcher.add('next')).resolves.toBe('next');
    expect(batches).toEqual([['slow', 'quick'], ['next']]);
    let closed = false;
    const closing = batcher.close().then(() => {
      closed = true;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(closed).toBe(false);
    release({ ok: false, error: new Error('read failed') });
    await expect(slow).rejects.toThrow('read failed');
    await closing;
    expect(closed).toBe(true);
  });
});
