/**
 * A realistic reconciliation report for the renderer tests: two tokens (USDC on Base 8453, USDT on
 * mainnet 1), a week of confirmed payments, findings of several kinds and ages, and strings an
 * attacker controls (a finding detail and reference id holding markup and a spreadsheet formula).
 */

import type { FindingRow } from '../../src/findings/finding.ts';
import { REPORT_SCHEMA, REPORT_VERSION, type ReconReport } from '../../src/recon/report/reportModel.ts';

export const HOSTILE_SCRIPT = '<script>alert(1)</script>';
export const HOSTILE_FORMULA = "=cmd|' /C calc'!A0";

const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const USDT = '0xdAC17F958D2ee523a2206206994597C13D831ec7';
const MERCHANT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const CUSTODY = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
/** The hashes of the two unmatched transfers (mainnet USDT in, Base USDC out). */
export const UNMATCHED_IN_TX = '0xab5801a7d398351b8be11c439e05c5b3259aec9b0f1e2d3c4b5a69788796a5cd';
export const UNMATCHED_OUT_TX = '0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

export const GENERATED_AT = '2026-11-08T00:30:00.000Z';

function hoursBefore(hours: number): string {
  return new Date(Date.parse(GENERATED_AT) - hours * 3_600_000).toISOString();
}

function finding(id: string, kind: string, ageHours: number, extra: Partial<FindingRow> = {}): FindingRow {
  return {
    id,
    kind,
    severity: 'warning',
    storeId: 'st_a',
    refType: 'intent',
    refId: `pi_${id}`,
    details: { note: 'see the intent' },
    firstSeenAt: hoursBefore(ageHours),
    lastSeenAt: hoursBefore(Math.min(ageHours, 0.2)),
    resolvedAt: null,
    ackedAt: null,
    ackNote: null,
    ...extra,
  };
}

export interface SampleOptions {
  /** The custody wallet's USDT proof fails (ledger and chain differ): the report does not pass. */
  failedProof?: boolean;
  /**
   * The clearing and matching checks found something (an unmatched transfer, a stale in_transit):
   * the books are still proven, but checks need a person's attention.
   */
  failedChecks?: boolean;
}

export function sampleReport(overrides: Partial<ReconReport> = {}, options: SampleOptions = {}): ReconReport {
  const failedProof = options.failedProof ?? false;
  const failedChecks = options.failedChecks ?? false;
  const days = [
    '2026-11-01',
    '2026-11-02',
    '2026-11-03',
    '2026-11-04',
    '2026-11-05',
    '2026-11-06',
    '2026-11-07',
  ];
  const report: ReconReport = {
    schema: REPORT_SCHEMA,
    version: REPORT_VERSION,
    generatedAt: GENERATED_AT,
    period: { from: '2026-11-01T00:00:00.000Z', to: '2026-11-08T00:00:00.000Z' },
    storeId: 'st_a',
    passed: !failedProof,
    checks: [
      {
        name: 'clearing.in_transit',
        layer: 'clearing',
        status: failedChecks ? 'fail' : 'pass',
        count: failedChecks ? 1 : 0,
        detail: failedChecks
          ? '1 intent confirmed over 60 minutes ago with in_transit not zero'
          : 'in_transit is zero for every settled intent',
      },
      {
        name: 'matching.intents',
        layer: 'matching',
        status: failedChecks ? 'fail' : 'pass',
        count: failedChecks ? 2 : 0,
        detail: failedChecks
          ? '2 transfers matched no payment (st_a|8453, st_a|1)'
          : 'every transfer matched (st_a|8453, st_a|1)',
      },
      {
        name: 'assertions.balance_proofs',
        layer: 'assertions',
        status: failedProof ? 'fail' : 'pass',
        count: failedProof ? 1 : 0,
        detail: failedProof ? '1 of 4 proofs failed' : 'all 4 proofs equal',
      },
      {
        name: 'assertions.trial_balance',
        layer: 'assertions',
        status: 'pass',
        count: 0,
        detail: 'debits equal credits per token',
      },
    ],
    accounts: [
      {
        code: 'asset:merchant_wallet:st_a:8453:USDC',
        kind: 'merchant_wallet',
        type: 'asset',
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        token: USDC,
        decimals: 6,
        opening: '1200.000000',
        debits: '5230.750000',
        credits: '-500.000000',
        closing: '5930.750000',
      },
      {
        code: 'liability:in_transit:st_a:8453:USDC',
        kind: 'in_transit',
        type: 'liability',
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        token: USDC,
        decimals: 6,
        opening: '0.000000',
        debits: '5336.500000',
        credits: '-5336.500000',
        closing: '0.000000',
      },
      {
        code: 'income:sales:st_a:1:USDT',
        kind: 'sales',
        type: 'income',
        storeId: 'st_a',
        chainId: 1,
        symbol: 'USDT',
        token: USDT,
        decimals: 6,
        opening: '-300.000000',
        debits: '0.000000',
        credits: '-2101.250000',
        closing: '-2401.250000',
      },
    ],
    payments: {
      byStatus: [
        {
          storeId: 'st_a',
          chainId: 8453,
          symbol: 'USDC',
          status: 'CONFIRMED',
          count: 41,
          requested: '5336.500000',
          paid: '5336.500000',
          fees: '105.750000',
          net: '5230.750000',
        },
        {
          storeId: 'st_a',
          chainId: 8453,
          symbol: 'USDC',
          status: 'CREATED',
          count: 6,
          requested: '412.000000',
          paid: '0.000000',
          fees: '0.000000',
          net: '0.000000',
        },
        {
          storeId: 'st_a',
          chainId: 1,
          symbol: 'USDT',
          status: 'CONFIRMED',
          count: 12,
          requested: '2100.000000',
          paid: '2101.250000',
          fees: '21.012500',
          net: '2080.237500',
        },
        {
          storeId: 'st_a',
          chainId: 1,
          symbol: 'USDT',
          status: 'UNKNOWN',
          count: 1,
          requested: '99.990000',
          paid: '0.000000',
          fees: '0.000000',
          net: '0.000000',
        },
      ],
      fiat: [
        { currency: 'EUR', status: 'CONFIRMED', count: 30, amount: '3120.40' },
        { currency: 'USD', status: 'CONFIRMED', count: 11, amount: '1999.99' },
      ],
      perDay: days.flatMap((day, i) => [
        {
          day,
          chainId: 8453,
          symbol: 'USDC',
          count: 4 + i,
          paid: `${(500 + i * 37).toFixed(0)}.250000`,
          fees: `${(10 + i).toFixed(0)}.005000`,
          net: `${(490 + i * 36).toFixed(0)}.245000`,
        },
        ...(i % 2 === 0
          ? [
              {
                day,
                chainId: 1,
                symbol: 'USDT',
                count: 3,
                paid: `${(400 + i * 11).toFixed(0)}.000001`,
                fees: '4.000000',
                net: `${(396 + i * 11).toFixed(0)}.000001`,
              },
            ]
          : []),
      ]),
      underpaid: [
        {
          intentId: 'pi_under_1',
          storeId: 'st_a',
          chainId: 8453,
          symbol: 'USDC',
          requested: '25.000000',
          paid: '23.500000',
          difference: '-1.500000',
          confirmedAt: '2026-11-03T10:11:12.000Z',
        },
      ],
      overpaid: [
        {
          intentId: 'pi_over_1',
          storeId: 'st_a',
          chainId: 1,
          symbol: 'USDT',
          requested: '100.000000',
          paid: '101.250000',
          difference: '1.250000',
          confirmedAt: null,
        },
      ],
    },
    payouts: [
      {
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        outcome: 'funded',
        count: 5,
        amount: '500.000000',
        fees: '0.420000',
      },
      {
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        outcome: 'claimed',
        count: 4,
        amount: '400.000000',
        fees: '0',
      },
      {
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        outcome: 'expired',
        count: 1,
        amount: '100.000000',
        fees: '0',
      },
    ],
    suspense: {
      unclassified: [
        {
          storeId: 'st_a',
          chainId: 8453,
          symbol: 'USDC',
          token: USDC.toLowerCase(),
          count: 2,
          amount: '37.5',
        },
      ],
      classified: [
        {
          classification: 'owner_contribution',
          storeId: 'st_a',
          chainId: 1,
          symbol: 'USDT',
          token: USDT.toLowerCase(),
          count: 1,
          amount: '1000',
        },
      ],
    },
    corrections: [
      {
        id: '1',
        findingId: '7',
        findingKind: 'payment_amount_mismatch',
        intentId: 'ci_short',
        entryId: '40',
        storeId: 'st_a',
        chainId: 8453,
        symbol: 'USDC',
        fromAccount: 'assets:in_transit',
        toAccount: 'expense:sales_shortfall',
        amount: '1',
        note: 'the payer sent 1 USDC less; written off | agreed',
        madeBy: 'alice',
        madeAt: '2026-11-03T10:00:00.000Z',
        undoneAt: null,
        undoneBy: null,
        undoNote: null,
      },
    ],
    findings: {
      counts: { new: 4, open: 2, resolved: 1 },
      samplePerKind: 100,
      fullList: 'csv/findings.csv',
      unresolvedByAge: [
        { kind: 'underpaid', lt1h: 1, h1to1d: 0, d1to7d: 0, gt7d: 1 },
        { kind: 'unmatched_transfer_in', lt1h: 0, h1to1d: 0, d1to7d: 1, gt7d: 0 },
        { kind: 'unmatched_transfer_out', lt1h: 0, h1to1d: 0, d1to7d: 1, gt7d: 0 },
        { kind: 'webhook.bad_signature', lt1h: 0, h1to1d: 1, d1to7d: 0, gt7d: 0 },
        { kind: 'webhook_without_chain_proof', lt1h: 0, h1to1d: 0, d1to7d: 0, gt7d: 1 },
      ],
      new: [
        finding('f_new_1', 'underpaid', 0.5, {
          severity: 'info',
          refType: 'checkout_intent',
          refId: 'pi_under_1',
          details: {
            token: 'USDC',
            chain_id: 8453,
            amount_coins: '25',
            actual_paid_amount: '23.5',
            difference: '1.5',
          },
        }),
        // A kind this version does not know (an older or newer daemon's): the generic sentence.
        finding('f_new_2', 'webhook.bad_signature', 5, {
          refType: 'webhook',
          refId: HOSTILE_FORMULA,
          details: { body: HOSTILE_SCRIPT, header: HOSTILE_FORMULA },
        }),
        finding('f_new_3', 'unmatched_transfer_in', 30, {
          refType: 'chain_transfer',
          refId: `1:${UNMATCHED_IN_TX}:7`,
          details: {
            wallet: MERCHANT.toLowerCase(),
            wallet_role: 'merchant',
            chain_id: 1,
            tx_hash: UNMATCHED_IN_TX,
            log_index: 7,
            block_number: '21450001',
            token_address: USDT.toLowerCase(),
            from: '0x1111111111111111111111111111111111111111',
            to: MERCHANT.toLowerCase(),
            amount: '1250',
            token: 'USDT',
          },
        }),
        finding('f_new_4', 'unmatched_transfer_out', 3 * 24, {
          refType: 'chain_transfer',
          refId: `8453:${UNMATCHED_OUT_TX}:2`,
          details: {
            wallet: MERCHANT.toLowerCase(),
            wallet_role: 'merchant',
            chain_id: 8453,
            tx_hash: UNMATCHED_OUT_TX,
            log_index: 2,
            block_number: '22913000',
            token_address: USDC.toLowerCase(),
            from: MERCHANT.toLowerCase(),
            to: '0x2222222222222222222222222222222222222222',
            amount: '31337.5',
            token: 'USDC',
          },
          ackedAt: hoursBefore(2),
          ackNote: 'refund, sent back by hand',
        }),
      ],
      open: [
        finding('f_open_1', 'webhook_without_chain_proof', 10 * 24, {
          refType: 'checkout_intent',
          refId: 'pi_stale_1',
          details: {
            waiting: '12',
            token: 'USDC',
            chain_id: 8453,
            confirmed_at: '2026-10-28T23:59:00+00:00',
            window_minutes: 60,
          },
        }),
        finding('f_open_2', 'underpaid', 9 * 24, {
          severity: 'info',
          refType: 'checkout_intent',
          refId: 'pi_under_0',
          details: {
            token: 'USDT',
            chain_id: 1,
            amount_coins: '1000',
            actual_paid_amount: '999.99',
            difference: '0.01',
          },
        }),
      ],
      resolved: [
        finding('f_res_1', 'balance_proof_failed', 6 * 24, {
          severity: 'critical',
          storeId: null,
          refType: 'wallet',
          refId: `1:${USDT.toLowerCase()}:${CUSTODY.toLowerCase()}`,
          details: {
            chain_id: 1,
            token: 'USDT',
            wallet: CUSTODY.toLowerCase(),
            role: 'custody',
            store_ids: ['st_a'],
            block_number: '21449000',
            ledger_balance: '10000000',
            chain_balance: '9999999',
            error: null,
          },
          resolvedAt: hoursBefore(4 * 24),
        }),
      ],
      byKind: [
        { kind: 'balance_proof_failed', severity: 'critical', new: 0, open: 0, resolved: 1 },
        { kind: 'underpaid', severity: 'info', new: 1, open: 1, resolved: 0 },
        { kind: 'unmatched_transfer_in', severity: 'warning', new: 1, open: 0, resolved: 0 },
        { kind: 'unmatched_transfer_out', severity: 'warning', new: 1, open: 0, resolved: 0 },
        { kind: 'webhook.bad_signature', severity: 'warning', new: 1, open: 0, resolved: 0 },
        { kind: 'webhook_without_chain_proof', severity: 'warning', new: 0, open: 1, resolved: 0 },
      ],
    },
    balanceProofs: [
      {
        chainId: 8453,
        symbol: 'USDC',
        token: USDC,
        wallet: MERCHANT,
        role: 'merchant',
        blockNumber: '22914001',
        ledgerBalance: '5930.750000',
        chainBalance: '5930.750000',
        result: 'pass',
        error: null,
        provedAt: '2026-11-08T00:29:10.000Z',
      },
      {
        chainId: 8453,
        symbol: 'USDC',
        token: USDC,
        wallet: CUSTODY,
        role: 'custody',
        blockNumber: '22914001',
        ledgerBalance: '99.580000',
        chainBalance: '99.580000',
        result: 'pass',
        error: null,
        provedAt: '2026-11-08T00:29:10.000Z',
      },
      {
        chainId: 1,
        symbol: 'USDT',
        token: USDT,
        wallet: MERCHANT,
        role: 'merchant',
        blockNumber: '21450777',
        ledgerBalance: '2401.250000',
        chainBalance: '2401.250000',
        result: 'pass',
        error: null,
        provedAt: '2026-11-08T00:29:12.000Z',
      },
      {
        chainId: 1,
        symbol: 'USDT',
        token: USDT,
        wallet: CUSTODY,
        role: 'custody',
        blockNumber: '21450777',
        ledgerBalance: '10.000000',
        chainBalance: failedProof ? '9.999999' : '10.000000',
        result: failedProof ? 'fail' : 'pass',
        error: null,
        provedAt: '2026-11-08T00:29:12.000Z',
      },
    ],
    trialBalance: [
      {
        chainId: 1,
        symbol: 'USDT',
        token: USDT,
        debits: '4502.500000',
        credits: '-4502.500000',
        net: '0.000000',
      },
      {
        chainId: 8453,
        symbol: 'USDC',
        token: USDC,
        debits: '11067.250000',
        credits: '-11067.250000',
        net: '0.000000',
      },
    ],
    ledgerChain: {
      atPeriodEnd: {
        seq: '1042',
        hash: 'a3f1c2d4e5b6978899aabbccddeeff00112233445566778899aabbccddeeff00',
        entryId: '1050',
        sealedAt: '2026-11-07T23:59:58.000Z',
      },
      atGeneration: {
        seq: '1097',
        hash: '0f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff0',
        entryId: '1101',
        sealedAt: '2026-11-08T00:29:59.000Z',
      },
    },
    valuation: [
      {
        storeId: 'st_a',
        currency: 'EUR',
        closingDate: '2026-11-07',
        revenue: {
          accounts: ['income:sales'],
          tokens: [{ chainId: 1, symbol: 'USDT', amount: '-25' }],
          value: '-23.08',
          unvalued: 0,
        },
        serviceFees: {
          accounts: ['expense:service_fees'],
          tokens: [{ chainId: 1, symbol: 'USDT', amount: '0.3' }],
          value: '0.28',
          unvalued: 0,
        },
        // A payout on a day without a rate: unvalued, never 0.
        payouts: {
          accounts: ['expense:payouts'],
          tokens: [{ chainId: 8453, symbol: 'USDC', amount: '50' }],
          value: null,
          unvalued: 1,
        },
        payoutFees: { accounts: ['expense:payout_fees'], tokens: [], value: '0.00', unvalued: 0 },
        fxRounding: { accounts: ['fx:rounding'], tokens: [], value: null, unvalued: 1 },
        fxUnrealised: {
          accounts: ['assets:wallet', 'assets:in_transit'],
          tokens: [{ chainId: 1, symbol: 'USDT', amount: '24.7' }],
          value: '0.16',
          unvalued: 0,
        },
        fxResult: null,
        missingRates: [{ date: '2026-11-05', symbol: 'USDC' }],
      },
    ],
  };
  return { ...report, ...overrides };
}
