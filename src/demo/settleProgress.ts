import type { Pool } from 'pg';
import { CheckoutStatus } from '../svc/models/checkoutStatus.ts';
import { FINAL_STATUS, type PayoutOutcome } from './demoScenario.ts';
import type { DriveResult } from './driveScenario.ts';

export interface SettleState {
  done: boolean;
  intents: { done: number; total: number };
  /** Confirmed payments proven on chain (and the stranger's transfer booked). */
  proofs: { done: number; total: number };
  payouts: { done: number; total: number };
  webhooksWaiting: number;
  /** Order ids of the first intents still short of their final state (for the progress line). */
  waitingOn: string[];
}

/** The entry that shows a claim link's planned outcome is booked, before and after the clock moves. */
const PAYOUT_DONE: Record<'before' | 'after', Record<PayoutOutcome, string>> = {
  before: {
    claimed: 'claim_link.claimed',
    cancelled: 'claim_link.refunded',
    expired: 'claim_link.funding_fee',
  },
  after: { claimed: 'claim_link.claimed', cancelled: 'claim_link.refunded', expired: 'claim_link.refunded' },
};

/**
 * How far the daemon has come with the scenario, read from its database: the intents in the
 * status their outcome ends in (timeouts only count once the clock has moved), confirmed payments
 * proven on chain (more proofs than reversals: the reorged one counts once proven again), claim
 * links booked to their outcome, and the webhook inbox empty.
 */
export async function settleProgress(
  pool: Pool,
  driven: DriveResult,
  when: 'before' | 'after',
): Promise<SettleState> {
  const expected = driven.intents.filter((i) => when === 'after' || i.plan.outcome !== 'timed_out');
  const { rows: statuses } = await pool.query<{ id: string; status: number | null; proven: boolean }>(
    `select ci.id, ci.status,
            (select count(*) filter (where e.kind = 'chain.payment_proven')
                  > count(*) filter (where e.kind = 'chain.payment_proven.reversal')
             from ledger_entries e where e.ref_type = 'checkout_intent' and e.ref_id = ci.id) as proven
     from checkout_intents ci where ci.id = any($1)`,
    [expected.map((i) => i.intentId)],
  );
  const byId = new Map(statuses.map((r) => [r.id, r]));
  const intentsDone = expected.filter((i) => {
    const status = byId.get(i.intentId)?.status;
    return status === CheckoutStatus[FINAL_STATUS[i.plan.outcome]];
  }).length;
  const confirmed = statuses.filter((r) => r.status === CheckoutStatus.CONFIRMED);
  const waitingOn = expected
    .filter((i) => {
      const row = byId.get(i.intentId);
      return (
        row?.status !== CheckoutStatus[FINAL_STATUS[i.plan.outcome]] ||
        (row.status === CheckoutStatus.CONFIRMED && !row.proven)
      );
    })
    .slice(0, 3)
    .map((i) => i.plan.key);

  // An unexplained transfer waits a while for a payment that explains it before it goes to
  // suspense, on the daemon's clock: the stranger's transfer is only expected once it has moved.
  const { rows: stranger } = await pool.query(
    `select 1 from ledger_entries where kind = 'chain.transfer_in_unmatched' and lower(metadata->>'tx_hash') = $1`,
    [driven.strangerTxHash],
  );
  const { rows: kinds } = await pool.query<{ ref_id: string; kind: string }>(
    `select distinct ref_id, kind from ledger_entries where ref_id = any($1)`,
    [driven.payouts.map((p) => p.claimLinkId)],
  );
  const booked = new Set(kinds.map((k) => `${k.ref_id} ${k.kind}`));
  const payoutsDone = driven.payouts.filter((p) =>
    booked.has(`${p.claimLinkId} ${PAYOUT_DONE[when][p.plan.outcome]}`),
  ).length;
  const { rows: inbox } = await pool.query<{ n: string }>(
    `select count(*)::text as n from webhook_inbox where status = 'received'`,
  );

  const state = {
    intents: { done: intentsDone, total: expected.length },
    proofs: {
      done: confirmed.filter((r) => r.proven).length + (when === 'after' ? stranger.length : 0),
      total: confirmed.length + (when === 'after' ? 1 : 0),
    },
    payouts: { done: payoutsDone, total: driven.payouts.length },
    webhooksWaiting: Number(inbox[0]?.n ?? 0),
    waitingOn,
  };
  return {
    ...state,
    done:
      state.intents.done === state.intents.total &&
      state.proofs.done === state.proofs.total &&
      state.payouts.done === state.payouts.total &&
      state.webhooksWaiting === 0,
  };
}
