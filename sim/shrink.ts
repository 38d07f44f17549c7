import type { SimEvent } from './schedule.ts';

/**
 * Delta debugging over a failing event list: removes ever smaller chunks of events while the run
 * still fails, and returns a list from which no single event can be removed (within the budget).
 * Sends are the world's ground truth (a return needs its payment on chain), and an intent's last
 * webhook is one the service delivers in the end: neither is removed.
 */
export async function shrinkEvents(
  events: readonly SimEvent[],
  fails: (subset: SimEvent[]) => Promise<boolean>,
  budget = { runs: 150 },
): Promise<SimEvent[]> {
  let current = [...events];
  const removable = () => current.filter((e) => e.k !== 'send' && !(e.k === 'webhook' && e.last));
  let chunks = 2;
  while (budget.runs > 0) {
    const candidates = removable();
    if (candidates.length === 0) break;
    const size = Math.ceil(candidates.length / chunks);
    let reduced = false;
    for (let start = 0; start < candidates.length && budget.runs > 0; start += size) {
      const drop = new Set<SimEvent>(candidates.slice(start, start + size));
      const subset = current.filter((e) => !drop.has(e));
      budget.runs--;
      if (await fails(subset)) {
        current = subset;
        chunks = Math.max(chunks - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (size <= 1) break;
      chunks = Math.min(chunks * 2, candidates.length);
    }
  }
  return current;
}
