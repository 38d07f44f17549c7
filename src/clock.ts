/**
 * The one injectable clock. Every time-dependent rule (signature skew, nonce lifetimes, polling,
 * expiry, report periods) reads time through a Clock so that tests and the sandbox can move it.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** Whole Unix seconds, the unit of every timestamp header in the service's protocol. */
export function unixSeconds(clock: Clock): number {
  return Math.floor(clock.now().getTime() / 1000);
}

/** A clock a test can set and move by hand. */
export function createManualClock(start: Date): Clock & { set(d: Date): void; advance(ms: number): void } {
  let current = start.getTime();
  return {
    now: () => new Date(current),
    set: (d) => {
      current = d.getTime();
    },
    advance: (ms) => {
      current += ms;
    },
  };
}
