import { seededRandom } from '../src/seededRandom.ts';
import type { ReorgChange, SimTransfer } from './chainDouble.ts';
import type { World } from './world.ts';

/**
 * What the service does with one call of a job (sim/serviceDouble.ts): answers (false), fails
 * with a 5xx (90000, HTTP 500) or a rate limit (40001, HTTP 429) without acting, or acts and its
 * answer is lost on the way (a timeout after the service acted).
 */
export type SvcCallFault = false | '5xx' | '429' | 'lost';

/**
 * The service faults and crashes of a job the old faults did not reach (`svc_errors`,
 * `lost_answers`, `crash_jobs`, `crash_prepared`); absent fields are no fault, as before they existed.
 */
export interface JobFaults {
  /** The service's answers to the job's successive calls; calls beyond the list are answered. */
  svc?: SvcCallFault[];
  /** The process dies after this many statements (crashingDb). */
  crash?: number;
  /** The crash's count includes the statements sent through executePrepared. */
  prepared?: true;
  /** conn_loss: at the crash's statement PostgreSQL drops the connection and the process lives on. */
  connLoss?: true;
  /**
   * When a job these faults cut short runs again (ms after it failed): BullMQ's backoff, a
   * sweeper, or a person running the same command hours later.
   */
  retryAfter?: number;
}

/**
 * The events the scheduler delivers to the product, in order, each at its time `t` (ms after the
 * world's start; the clock only moves forward). An event list is what a failure is shrunk over
 * and what a replay runs, so every event is plain data.
 */
export type SimEvent =
  /** stablebooks learns the intent at its creation (`intents create` or `intents track`). */
  | ({ k: 'track'; t: number; intent: string } & JobFaults)
  /** A transfer of the world is sent (it is in the next block). Ground truth: never shrunk away. */
  | { k: 'send'; t: number; tx: string }
  | { k: 'mine'; t: number }
  /**
   * The chain (the world's first when absent) replaces its last `depth` blocks; a change of a
   * reorg shape also reaches its target's block and changes what it holds (sim/chainShapes.ts).
   */
  | {
      k: 'reorg';
      t: number;
      depth: number;
      chain?: number;
      change?: ReorgChange;
      /**
       * funding_resent: the reorg comes only if the indexer has read its target by then (the
       * shape's premise, a funding the books saw); a lagging node's dropped log may hide it, and
       * then the reorg does not come (sim/runWorld.ts).
       */
      read?: true;
    }
  /** The next eth_getLogs answer leaves a log out (of the world's first chain when `chain` is absent). */
  | { k: 'dropLog'; t: number; chain?: number }
  /** One indexer pass and the settlement of what became final (the chain job). */
  | { k: 'index'; t: number; crash?: number; prepared?: true; connLoss?: true }
  /** The service delivers a webhook it sent at `sentAt`, and a worker processes what is waiting. */
  | {
      k: 'webhook';
      t: number;
      sentAt: number;
      intent: string;
      id: string;
      crash?: number;
      batch: number;
      /** The intent's last notification, which the service delivers in the end: never shrunk away. */
      last?: true;
      /**
       * clock_jump: how far the service's clock is off (ms, either way) when it signs this delivery;
       * refused as stale, it is delivered again a few minutes later with the clock right.
       */
      skewMs?: number;
      /** The service's answers to the batch's intent reads. */
      svc?: SvcCallFault[];
      prepared?: true;
      connLoss?: true;
    }
  /** One poll of an intent; its reads lag `lag` ms behind, or fail. */
  | {
      k: 'poll';
      t: number;
      intent: string;
      lag: number;
      fail: false | '5xx' | '429';
      crash?: number;
      prepared?: true;
      connLoss?: true;
    }
  /**
   * stablebooks creates a payout (`payouts create`), or runs the same create again; `attempts`:
   * createPayout's own tries with the same reference_id (1 when absent).
   */
  | ({ k: 'payout'; t: number; ref: string; attempts?: number } & JobFaults)
  /** stablebooks cancels a payout's link (`payouts cancel`). */
  | ({ k: 'cancel'; t: number; ref: string } & JobFaults)
  /** The recipient claims the link (the service moves the money). */
  | { k: 'claim'; t: number; ref: string }
  /** The clock passes a link's 14 days (the service refunds it if unclaimed); the daemon's expiry job runs. */
  | ({ k: 'expire'; t: number; ref: string } & JobFaults);

/**
 * contradict: the service cancels a confirmed intent (and may confirm it again). The service's
 * faults on every call and the crashes of the payout and tracking jobs (FAULTS below) came later,
 * each drawing from a random stream of its own.
 */
export type Fault =
  | 'dup'
  | 'drop'
  | 'delay'
  | 'reorder'
  | 'lag'
  | 'errors'
  | 'logs'
  | 'reorg'
  | 'crash'
  | 'contradict'
  | 'svc_errors'
  | 'lost_answers'
  | 'crash_jobs'
  | 'crash_prepared'
  | 'clock_jump'
  | 'conn_loss';

/** Each fault with one line on what it does (`--faults list`). */
export const FAULTS: Record<Fault, string> = {
  dup: 'a webhook delivered 2 or 3 times; a payout created twice with the same reference_id',
  drop: "a webhook lost for good (never an intent's last)",
  delay: 'a webhook delivered 1 to 3 days late',
  reorder: 'neighbouring webhook deliveries swap',
  lag: 'a poll reads a replica up to 30 minutes behind',
  errors: "a poll's reads fail with a 5xx or a gateway's 429",
  logs: 'an eth_getLogs answer leaves out a log of a block not yet final',
  reorg: 'reorgs of depth 1 to 64, also after booking',
  crash: 'the chain job, a webhook batch or a poll dies after its k-th statement',
  contradict: 'the service cancels a confirmed intent, and may confirm it again',
  svc_errors:
    "5xx (90000) and 429 (40001) on every other service call: tracking's read, webhook-triggered reads, claim-link create (tried 1 to 3 times by createPayout) and cancel",
  lost_answers:
    'the service acts and its answer is lost: claim-link create (also on a replay), cancel (the link is cancelled and refunded), reads',
  crash_jobs: 'trackIntent, createPayout, cancelPayout and expireClaimLinks die after their k-th statement',
  crash_prepared: "a crash's statement count includes the statements sent through executePrepared",
  clock_jump:
    "the service's clock is 5 to 15 minutes off when it signs a webhook: the intake refuses the stale timestamp, and the service delivers it again with its clock right and a fresh nonce",
  conn_loss:
    'half the crashes are PostgreSQL terminating the connection instead (a restart, a failover): the statement fails with its error, the process lives on and the job is retried',
};
export const ALL_FAULTS: readonly Fault[] = Object.keys(FAULTS) as Fault[];
/**
 * The faults before the service faults existed: seeds found then replay with these
 * (test/sim/regressions.test.ts), the same events as when they failed.
 */
export const FIRST_FAULTS: readonly Fault[] = [
  'dup',
  'drop',
  'delay',
  'reorder',
  'lag',
  'errors',
  'logs',
  'reorg',
  'crash',
  'contradict',
];

export interface ScheduleOptions {
  faults: ReadonlySet<Fault>;
  /** At most this many events before quiescence (the world's events are cut to fit). */
  maxEvents: number;
}

/** Every transfer the world may send, by its key. */
export function worldTransfers(world: World): Map<string, SimTransfer & { at: number }> {
  const out = new Map<string, SimTransfer & { at: number }>();
  const merchantOf = new Map(world.stores.map((s) => [s.storeId, s.merchant]));
  for (const i of world.intents) {
    const paid = i.timeline.find((s) => s.status === 10);
    if (!paid) continue;
    const merchant = merchantOf.get(i.storeId) as `0x${string}`;
    const token = i.token.address;
    const payee = i.route === 'temp' ? i.temp : merchant;
    // bundle_payment: the intent's P is part of the transfer of the intent it is bundled into.
    const bundled = world.intents.filter((b) => b.bundledInto === i.id).reduce((sum, b) => sum + b.P, 0n);
    const pieces = i.pieces ?? [];
    if (!i.bundledInto)
      out.set(`pay:${i.id}`, {
        at: paid.at,
        token,
        from: i.payer,
        to: payee,
        value: i.P - pieces.reduce((sum, piece) => sum + piece.value, 0n) + bundled,
        txHash: i.tx1,
      });
    for (const [k, piece] of pieces.entries())
      out.set(`piece:${i.id}:${k}`, {
        at: paid.at + piece.delayMs,
        token,
        from: piece.from,
        to: payee,
        value: piece.value,
        txHash: piece.txHash,
      });
    const confirmed = i.timeline.find((s) => s.status === 20);
    if (i.tx2 && confirmed)
      out.set(`sweep:${i.id}`, {
        at: confirmed.at - 1,
        token,
        from: i.temp,
        to: merchant,
        value: i.P - i.F,
        txHash: i.tx2,
      });
    const cancelled = i.timeline.find((s) => s.status === -4);
    const sendBack =
      i.timeline.find((s) => s.status === 5) ??
      (i.returnAfterCancelMs !== undefined && cancelled
        ? { at: cancelled.at + i.returnAfterCancelMs }
        : undefined);
    if (i.returnTx && sendBack)
      out.set(`return:${i.id}`, {
        at: sendBack.at,
        token,
        from: merchant,
        to: i.payer,
        value: i.P,
        txHash: i.returnTx,
      });
  }
  for (const s of world.strays) out.set(`stray:${s.txHash}`, { ...s });
  const custodyOf = new Map(world.stores.map((s) => [s.storeId, s.custody]));
  for (const d of world.deposits)
    out.set(`deposit:${d.txHash}`, {
      at: 0,
      token: d.token.address,
      from: d.from,
      to: custodyOf.get(d.storeId) as `0x${string}`,
      value: d.value,
      txHash: d.txHash,
    });
  return out;
}

export function scheduleEvents(world: World, seed: string, options: ScheduleOptions): SimEvent[] {
  const rnd = seededRandom(`schedule:${seed}`);
  const has = (f: Fault) => options.faults.has(f);
  const chance = (p: number) => rnd() < p;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const crash = () => (has('crash') && chance(0.1) ? int(1, 12) : undefined);
  // The service's clock jumps draw from a stream of their own: without the fault, nothing changes.
  const jumps = seededRandom(`schedule:${seed}:clock_jump`);
  const skew = (): number | undefined =>
    has('clock_jump') && jumps() < 0.15
      ? (jumps() < 0.5 ? -1 : 1) * (302_000 + Math.floor(jumps() * 600_000))
      : undefined;
  const events: SimEvent[] = [];

  /** When each world transfer's own mine event comes, by transaction hash (the reorg shapes' clock). */
  const minedAt = new Map<string, number>();
  for (const [key, tx] of worldTransfers(world)) {
    events.push({ k: 'send', t: tx.at, tx: key });
    const mine = { k: 'mine' as const, t: tx.at + int(1_000, 30_000) };
    events.push(mine);
    minedAt.set(tx.txHash, mine.t);
  }
  // A funding is mined while its create call waits (sim/serviceDouble.ts): at the create's time,
  // unless a fault delays the call (its reorg then replaces blocks without it).
  for (const p of world.payouts) if (p.fundingResend) minedAt.set(p.fundingTx, p.createdAt);
  for (const intent of world.intents) {
    if (intent.trackedAtCreation) events.push({ k: 'track', t: intent.createdAt + 1, intent: intent.id });
    // The service notifies each state after the payment; deliveries fault independently.
    let n = 0;
    const notified = intent.timeline.filter((s) => s.status !== 1);
    for (const state of notified) {
      const id = `wh_${intent.id}_${n++}`;
      // A dropped webhook is lost for good, except the intent's last one: the service retries a
      // delivery until it is acknowledged, and stablebooks stops polling at a terminal status, so
      // only that last notification tells it the service changed its mind after one.
      const last = state === notified[notified.length - 1];
      const deliveries = has('drop') && !last && chance(0.2) ? 0 : has('dup') && chance(0.3) ? int(2, 3) : 1;
      for (let d = 0; d < deliveries; d++) {
        const delay = has('delay') && chance(0.15) ? int(1, 3) * 86_400_000 : int(100, 60_000);
        const delivery: SimEvent = {
          k: 'webhook',
          t: state.at + delay + d * int(0, 120_000),
          sentAt: state.at,
          intent: intent.id,
          id,
          crash: crash(),
          batch: int(1, 8),
          ...(last ? { last: true as const } : {}),
          ...withSkew(skew()),
        };
        // webhooks_lost: drawn as any delivery, so the rest of the schedule stays as it was; never sent.
        if (!intent.webhooksLost) events.push(delivery);
      }
    }
    // Polls race the webhooks, some reading a lagging replica or failing.
    for (let p = int(0, 4); p > 0; p--) {
      events.push({
        k: 'poll',
        t: intent.createdAt + int(0, 2 * 3_600_000),
        intent: intent.id,
        lag: has('lag') && chance(0.4) ? int(1_000, 30 * 60_000) : 0,
        fail: has('errors') && chance(0.15) ? (chance(0.5) ? '5xx' : '429') : false,
        crash: crash(),
      });
    }
  }
  for (const p of world.payouts) {
    events.push({ k: 'payout', t: p.createdAt, ref: p.referenceId });
    if (p.lostAnswer || (has('dup') && chance(0.2)))
      events.push({ k: 'payout', t: p.rerunAt, ref: p.referenceId });
    if (p.end === 'claimed' || p.end === 'cancel_after_claim')
      events.push({ k: 'claim', t: p.endAt, ref: p.referenceId });
    if (p.end === 'cancelled' || p.end === 'cancel_after_claim')
      events.push({ k: 'cancel', t: p.endAt + int(1_000, 600_000), ref: p.referenceId });
    if (p.end === 'expired') events.push({ k: 'expire', t: p.endAt, ref: p.referenceId });
  }
  const indexAt: number[] = [];
  // A world of two chains (two_chains) sends each node fault to one of them, drawn from a stream
  // of its own: a world of one chain draws nothing more.
  const chainIds = [...new Set(world.tokens.map((t) => t.chainId))];
  const chainRnd = seededRandom(`schedule:${seed}:two_chains`);
  const faultChain = () =>
    chainIds.length > 1 ? { chain: chainIds[Math.floor(chainRnd() * chainIds.length)] as number } : {};
  for (let t = 0; t < world.span; t += int(60_000, 20 * 60_000)) {
    events.push({ k: 'mine', t });
    events.push({ k: 'index', t: t + 1, crash: crash() });
    indexAt.push(t + 1);
    if (has('logs') && chance(0.1)) events.push({ k: 'dropLog', t, ...faultChain() });
    if (has('reorg') && chance(0.08))
      events.push({ k: 'reorg', t: t + 2, depth: chance(0.8) ? int(1, 3) : int(4, 64), ...faultChain() });
  }
  // The reorg shapes' reorgs: right after the target's own mine event (the indexer has not read
  // it), right after the first index pass after it (read, not final), or after the first pass 40
  // minutes later (final and booked). Placed after the events of the same time (a stable sort).
  for (const plan of world.reorgs) {
    const mined = minedAt.get(plan.target);
    if (mined === undefined) continue;
    const after = (from: number) => indexAt.find((i) => i >= from);
    const t =
      plan.when === 'before_index'
        ? mined
        : after(plan.when === 'after_index' ? mined + 1 : mined + 40 * 60_000);
    if (t === undefined) continue;
    const change: ReorgChange = { kind: plan.change, target: plan.target };
    if (plan.replacement) change.replacement = plan.replacement;
    if (plan.filler) change.filler = plan.filler;
    const read = plan.shape === 'funding_resent' ? { read: true as const } : {};
    events.push({ k: 'reorg', t, depth: plan.depth, chain: plan.chainId, change, ...read });
  }
  events.sort((a, b) => a.t - b.t);
  // Reordered delivery: neighbouring deliveries swap (their times too, so the clock still only moves on).
  if (has('reorder'))
    for (let i = 0; i + 1 < events.length; i++) {
      const a = events[i] as SimEvent;
      const b = events[i + 1] as SimEvent;
      // Never delivered before it was sent: b takes a's time only when it was sent by then.
      if (a.k === 'webhook' && b.k === 'webhook' && b.sentAt <= a.t && chance(0.3)) {
        events[i] = { ...b, t: a.t };
        events[i + 1] = { ...a, t: b.t };
      }
    }
  let kept = events;
  if (events.length > options.maxEvents) {
    // Keep every send (the world's ground truth) and as many of the others as fit, in order.
    const sends = events.filter((e) => e.k === 'send').length;
    let room = Math.max(0, options.maxEvents - sends);
    kept = events.filter((e) => e.k === 'send' || room-- > 0);
  }
  // A create whose answer is lost is matched to its funding by amount: it must act when the
  // world says, not after a fault delayed it; and a near-equal payout's losses are the world's
  // own (its generator keeps such pairs to ends the chain decides), so no fault adds one
  // (SimPayout.createReachesService). A funding in two parts loses no answer either: matched by
  // amount, its first part (below A) funds nothing, a shape sim/piecesShapes.ts keeps out of the
  // world for lostAnswer and no fault may bring back (docs/decisions.md, "Payments by allocation"),
  // neither a lost answer nor a crash between the service's answer and its commit.
  const byRef = new Map(world.payouts.map((p) => [p.referenceId, p]));
  // A payment in pieces (payment_pieces) is proven by top-ups mined in the intent's window, which
  // opens at its first tracking (docs/accounting.md, rule 2): an intent tracked at its creation
  // must be tracked then, not after a fault delayed the call past its pieces (drawn all the same).
  const inPieces = new Set(world.intents.filter((i) => i.pieces).map((i) => i.id));
  return withJobFaults(kept, seed, options.faults).map((e) => {
    if (e.k === 'track' && inPieces.has(e.intent)) {
      const {
        svc: _svc,
        retryAfter: _retryAfter,
        crash: _crash,
        prepared: _prepared,
        connLoss: _connLoss,
        ...rest
      } = e as SimEvent & JobFaults;
      return rest as SimEvent;
    }
    if (e.k !== 'payout') return e;
    const p = byRef.get(e.ref);
    // A split funding, or one the service sends again after a reorg (funding_resent), has no
    // rule matching it by amount (docs/decisions.md, "Money in pieces and bundles in the
    // simulator"): their create answers are never lost, nor lost by a crash (seed 38: a crash
    // after the service funded the link left the re-run an idempotent hit without the hash).
    if (p?.fundingKind === 'split' || p?.fundingResend) {
      const { crash: _crash, prepared: _prepared, connLoss: _connLoss, ...rest } = e as SimEvent & JobFaults;
      const svc = rest.svc?.map((f) => (f === 'lost' ? false : f));
      while (svc && svc.length > 0 && svc[svc.length - 1] === false) svc.pop();
      return { ...rest, svc: svc && svc.length > 0 ? svc : undefined } as SimEvent;
    }
    const lostHere = (e as JobFaults).svc?.includes('lost') === true;
    if (!p?.createReachesService && !p?.lostAnswer && !lostHere) return e;
    // Drawn as any other create's, then kept from stopping it before the service acts.
    const { crash: _crash, prepared: _prepared, connLoss: _connLoss, ...rest } = e as SimEvent & JobFaults;
    const svc = p?.createReachesService ? [] : rest.svc?.filter((f) => f === 'lost' || f === false);
    return svc?.some((f) => f === 'lost') ? { ...rest, svc } : { ...rest, svc: undefined };
  });
}

/**
 * The service faults and job crashes of the later faults, drawn after the events are laid out
 * and each from a stream of its own (`schedule:<fault>:<seed>`): a fault that is off draws
 * nothing, so the events of the first faults are exactly what they were.
 */
function withJobFaults(events: SimEvent[], seed: string, faults: ReadonlySet<Fault>): SimEvent[] {
  const stream = (fault: Fault) => {
    if (!faults.has(fault)) return undefined;
    const r = seededRandom(`schedule:${fault}:${seed}`);
    return {
      chance: (p: number) => r() < p,
      int: (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1)),
      r,
    };
  };
  const errors = stream('svc_errors');
  const lost = stream('lost_answers');
  const crashes = stream('crash_jobs');
  const prepared = faults.has('crash_prepared');
  const connLoss = stream('conn_loss');
  if (!errors && !lost && !crashes && !prepared && !connLoss) return events;
  // Drawn only for an event these faults reached.
  const later = seededRandom(`schedule:retry:${seed}`);
  return events.map((event) => {
    if (event.k === 'send' || event.k === 'mine' || event.k === 'reorg' || event.k === 'dropLog')
      return event;
    if (event.k === 'claim') return event;
    const out = { ...event } as SimEvent & JobFaults & { attempts?: number };
    const calls: SvcCallFault[] = [];
    const serviceCalls =
      event.k === 'track' || event.k === 'webhook' || event.k === 'payout' || event.k === 'cancel';
    if (serviceCalls && errors) {
      if (event.k === 'payout') out.attempts = errors.int(1, 3);
      if (errors.chance(0.25))
        for (let n = errors.int(1, 3), i = 0; i < n; i++) {
          const r = errors.r();
          calls[i] = r < 0.4 ? '5xx' : r < 0.8 ? '429' : false;
        }
    }
    if (serviceCalls && lost) {
      const acting = event.k === 'payout' || event.k === 'cancel';
      if (lost.chance(acting ? 0.2 : 0.1)) {
        const at = lost.int(0, event.k === 'cancel' ? 0 : 2);
        calls[at] = calls[at] || 'lost';
      }
    }
    for (let i = 0; i < calls.length; i++) calls[i] = calls[i] ?? false;
    while (calls.length > 0 && calls[calls.length - 1] === false) calls.pop();
    if (calls.length > 0) out.svc = calls;
    if (
      crashes &&
      (event.k === 'track' || event.k === 'payout' || event.k === 'cancel' || event.k === 'expire')
    )
      if (crashes.chance(0.15)) out.crash = crashes.int(1, 12);
    if (prepared && out.crash !== undefined) out.prepared = true;
    if (connLoss && out.crash !== undefined && connLoss.chance(0.5)) out.connLoss = true;
    const hit = out.svc !== undefined || (out.crash !== undefined && event.crash === undefined);
    // A minute of backoff, or up to 4 hours before a person runs the command again.
    if (hit) out.retryAfter = later() < 0.5 ? 60_000 : 60_000 + Math.floor(later() * 4 * 3_600_000);
    return out;
  });
}

function withSkew(skewMs: number | undefined): { skewMs?: number } {
  return skewMs === undefined ? {} : { skewMs };
}
