import { describe, expect, it } from 'vitest';
import { MIN_INTENTS, MIN_PAYOUTS, planScenario, ScenarioSizeError } from '../../../src/demo/demoScenario.ts';

describe('planScenario', () => {
  it('behavior: the same seed plans the same scenario, another seed another one', () => {
    const a = planScenario({ seed: 's1', intents: 200, payouts: 20 });
    expect(planScenario({ seed: 's1', intents: 200, payouts: 20 })).toEqual(a);
    expect(planScenario({ seed: 's2', intents: 200, payouts: 20 }).intents).not.toEqual(a.intents);
  });

  it('behavior: every size plants each problem: webhook faults, fee mismatch, manual review, one reorg, each payout outcome', () => {
    for (const [intents, payouts] of [
      [MIN_INTENTS, MIN_PAYOUTS],
      [200, 20],
    ] as const) {
      const s = planScenario({ seed: 'x', intents, payouts });
      expect(s.intents).toHaveLength(intents);
      expect(s.payouts).toHaveLength(payouts);
      const faults = s.intents.map((i) => i.webhook);
      expect(faults.filter((f) => f === 'dropped')).toHaveLength(2);
      expect(faults.filter((f) => f === 'reordered')).toHaveLength(3);
      for (const outcome of [
        'fee_mismatch',
        'underpaid_accepted',
        'overpaid',
        'kyt_rejected',
        'manual_review',
        'timed_out',
      ])
        expect(
          s.intents.some((i) => i.outcome === outcome),
          outcome,
        ).toBe(true);
      const reorged = s.intents.filter((i) => i.reorged);
      expect(reorged).toHaveLength(1);
      expect(reorged[0]).toMatchObject({
        route: 'direct',
        outcome: 'exact',
        webhook: 'none',
        createdBy: 'stablebooks',
      });
      expect(new Set(s.payouts.map((p) => p.outcome))).toEqual(new Set(['claimed', 'cancelled', 'expired']));
      // Faults only on intents stablebooks tracks (a dropped webhook of an unknown intent is invisible).
      expect(s.intents.filter((i) => i.webhook !== 'none' && i.createdBy !== 'stablebooks')).toEqual([]);
      // KYT and manual review only exist on the screened route.
      expect(
        s.intents.filter(
          (i) => (i.outcome === 'kyt_rejected' || i.outcome === 'manual_review') && i.route !== 'temp_wallet',
        ),
      ).toEqual([]);
    }
  });

  it('behavior: amounts are whole cents in bigint, payouts decimal strings', () => {
    const s = planScenario({ seed: 'x', intents: 50, payouts: 10 });
    for (const i of s.intents) {
      expect(typeof i.pricing.amountCents).toBe('bigint');
      expect(i.pricing.amountCents).toBeGreaterThanOrEqual(500n);
    }
    for (const p of s.payouts) expect(p.amount).toMatch(/^\d+\.\d{2}$/);
  });

  it('error: sizes too small to plant every problem are refused with the bound', () => {
    expect(() => planScenario({ seed: 'x', intents: MIN_INTENTS - 1, payouts: 20 })).toThrow(
      ScenarioSizeError,
    );
    expect(() => planScenario({ seed: 'x', intents: 200, payouts: 1 })).toThrow(
      /--payouts must be a whole number from 3/,
    );
  });
});
