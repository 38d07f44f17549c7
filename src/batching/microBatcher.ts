import { coerceError } from '../errors/coerceError.ts';
/**
 * Group commit for concurrent callers: the items added within one event-loop turn are handed to
 * `run` together, and each caller gets its own item's result once the batch is done. At most
 * `maxInFlight` batches run at once; items added meanwhile wait and form the next batch, so
 * batches grow with the load instead of work piling up (BASELINES: one commit, or one round trip,
 * for many items is what beats the per-item rate). Used by the webhook intake (one statement per
 * batch of webhooks) and the webhook workers (one transaction per batch of payments).
 */
export type ItemResult<O> = { ok: true; value: O } | { ok: false; error: Error };

export interface MicroBatcherOptions<I, O> {
  /**
   * Does the work of one batch and returns one result per item, in the items' order. It should
   * not throw; if it does, every item of the batch fails with that error. A result may still be
   * pending (work of an item that outlives its batch, such as a webhook whose intent read hangs):
   * its caller waits for it, but the batch's slot is free as soon as `run` resolves.
   */
  run(items: I[]): Promise<Array<ItemResult<O> | Promise<ItemResult<O>>>>;
  maxBatch: number;
  maxInFlight: number;
}

export interface MicroBatcher<I, O> {
  /** Resolves (or rejects) with this item's result once its batch is done. */
  add(item: I): Promise<O>;
  /** Items accepted whose batch has not finished yet (waiting or in a running batch). */
  pending(): number;
  /** Refuses new items and resolves once every accepted item is settled (for shutdown). */
  close(): Promise<void>;
}

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: Error): void;
}

export function createMicroBatcher<I, O>(options: MicroBatcherOptions<I, O>): MicroBatcher<I, O> {
  const maxBatch = Math.max(1, options.maxBatch);
  const maxInFlight = Math.max(1, options.maxInFlight);
  let queue: Array<Waiting<I, O>> = [];
  let scheduled = false;
  let inFlight = 0;
  let itemsInFlight = 0;
  let closed = false;
  /** Items whose batch is done but whose own result is still pending. */
  let outstanding = 0;
  const idleWaiters: Array<() => void> = [];

  const schedule = (): void => {
    if (scheduled || queue.length === 0 || inFlight >= maxInFlight) return;
    scheduled = true;
    // setImmediate runs after this turn's I/O callbacks, so everything already received joins the
    // batch; it always fires, so no item is left waiting.
    setImmediate(startBatches);
  };

  const wakeIfIdle = (): void => {
    if (queue.length > 0 || inFlight > 0 || outstanding > 0) return;
    for (const wake of idleWaiters.splice(0)) wake();
  };

  function startBatches(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < maxInFlight) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      inFlight += 1;
      itemsInFlight += batch.length;
      void runBatch(batch).finally(() => {
        inFlight -= 1;
        itemsInFlight -= batch.length;
        schedule();
        wakeIfIdle();
      });
    }
  }

  async function runBatch(batch: Array<Waiting<I, O>>): Promise<void> {
    let results: Array<ItemResult<O> | Promise<ItemResult<O>>>;
    try {
      results = await options.run(batch.map((w) => w.item));
    } catch (err) {
      const error = coerceError(err);
      results = batch.map(() => ({ ok: false, error }));
    }
    const hand = (w: Waiting<I, O>, result: ItemResult<O>): void => {
      if (result.ok) w.resolve(result.value);
      else w.reject(result.error);
    };
    batch.forEach((w, i) => {
      const result = results[i] ?? { ok: false, error: new Error('batch returned no result for this item') };
      if (!(result instanceof Promise)) {
        hand(w, result);
        return;
      }
      outstanding += 1;
      result
        .then(
          (r) => hand(w, r),
          (err: unknown) => hand(w, { ok: false, error: coerceError(err) }),
        )
        .finally(() => {
          outstanding -= 1;
          wakeIfIdle();
        });
    });
  }

  return {
    add(item) {
      if (closed) return Promise.reject(new Error('the batcher is closed'));
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        schedule();
      });
    },
    pending: () => queue.length + itemsInFlight,
    close() {
      closed = true;
      return new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        wakeIfIdle();
      });
    },
  };
}
