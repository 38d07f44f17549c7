import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createChainRegistry } from '../../../src/config/chainRegistry.ts';
import type { FindingRow } from '../../../src/findings/finding.ts';
import { FINDING_KINDS } from '../../../src/findings/findingKinds.ts';
import {
  FINDING_SENTENCES,
  findingSentence,
  genericSentence,
  type Sentence,
  sentenceText,
} from '../../../src/recon/report/findingSentences.ts';
import { shortHex } from '../../../src/recon/report/humanFormat.ts';

const chains = createChainRegistry();
const text = (s: Sentence) => sentenceText(s, (ref) => shortHex(ref.value));

function finding(
  kind: string,
  details: Record<string, unknown>,
  extra: Partial<FindingRow> = {},
): FindingRow {
  return {
    id: '1',
    kind,
    severity: 'warning',
    storeId: 'st_a',
    refType: 'checkout_intent',
    refId: 'pi_1',
    details,
    firstSeenAt: '2026-11-02T10:00:00.000Z',
    lastSeenAt: '2026-11-02T10:00:00.000Z',
    resolvedAt: null,
    ackedAt: null,
    ackNote: null,
    ...extra,
  };
}

/** The kinds of the tables of docs/accounting.md, "Findings". */
function documentedKinds(): string[] {
  const doc = readFileSync(new URL('../../../docs/accounting.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('\n## Findings'));
  const end = section.indexOf('\n## ', 4);
  return [...(end < 0 ? section : section.slice(0, end)).matchAll(/^\| `([a-z_]+)`/gm)].map((m) => m[1]!);
}

const TX = '0xab5801a7d398351b8be11c439e05c5b3259aec9b0f1e2d3c4b5a69788796a5cd';

describe('finding sentences', () => {
  it('behavior: FINDING_KINDS is the kinds docs/accounting.md lists, and every one has its own sentence', () => {
    expect([...FINDING_KINDS].sort()).toEqual(documentedKinds().sort());
    expect(Object.keys(FINDING_SENTENCES).sort()).toEqual([...FINDING_KINDS].sort());
    for (const kind of FINDING_KINDS) {
      const own = text(findingSentence(finding(kind, {}), chains));
      expect(own, kind).not.toBe(text(genericSentence(finding(kind, {}))));
    }
  });

  it('behavior: every kind reads as a sentence with or without its details, never JSON or undefined', () => {
    const busy = {
      token: 'USDT',
      chain_id: 1,
      amount: '1250',
      tx_hash: TX,
      differences: { chain_id: { booked: 1, observed: 56, webhook: 1, api: 56 } },
      proven: [{ amount: '5', token: 'USDT', chain_id: 1 }],
      status: 3,
      other_candidates: [{ payout_id: 'p', amount: '1' }],
    };
    for (const kind of FINDING_KINDS) {
      for (const details of [{}, busy]) {
        const sentence = text(findingSentence(finding(kind, details), chains));
        expect(sentence, kind).toMatch(/^[A-Z].*\.$/);
        expect(sentence, kind).not.toMatch(/undefined|NaN|\[object|[{}"]/);
      }
    }
  });

  it('behavior: amounts with separators, the hash as a part the renderer links', () => {
    const sentence = findingSentence(
      finding(
        'unmatched_transfer_in',
        { wallet_role: 'merchant', chain_id: 1, tx_hash: TX, amount: '1250', token: 'USDT' },
        { refType: 'chain_transfer', refId: `1:${TX}:7` },
      ),
      chains,
    );
    expect(text(sentence)).toBe(
      'A transfer of 1,250.00 USDT into the merchant wallet of st_a matched no payment (tx 0xab58…a5cd).',
    );
    expect(sentence).toContainEqual({ type: 'tx', value: TX, chainId: 1 });

    expect(
      text(
        findingSentence(
          finding('underpaid', {
            token: 'USDC',
            chain_id: 8453,
            amount_coins: '1234567.5',
            actual_paid_amount: '1234567.000001',
            difference: '0.499999',
          }),
          chains,
        ),
      ),
    ).toBe(
      'Intent pi_1 was paid 1,234,567.000001 USDC of the 1,234,567.50 USDC requested on Base: 0.499999 USDC short.',
    );

    // Base units become token units when the registry knows the token.
    expect(
      text(
        findingSentence(
          finding(
            'balance_proof_failed',
            {
              chain_id: 1,
              token: 'USDT',
              wallet: '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc',
              role: 'custody',
              ledger_balance: '10000000',
              chain_balance: '9999999',
              block_number: '21449000',
            },
            { refType: 'wallet' },
          ),
          chains,
        ),
      ),
    ).toBe(
      'The custody wallet 0x3c44…93bc on Ethereum (USDT) does not match the chain: the ledger says 10.00 USDT, the chain 9.999999 USDT at block 21,449,000.',
    );
  });

  it('behavior: an unknown kind lists its details as key: value, nested ones without braces', () => {
    const sentence = text(
      findingSentence(
        finding('bridge.lost_message', {
          amount: '5',
          route: { from: 1, to: 10 },
          hops: ['a', 'b'],
          empty: {},
        }),
      ),
    );
    expect(sentence).toBe(
      'Bridge lost message on checkout intent pi_1 (amount: 5; route: (from 1, to 10); hops: a, b; empty: none).',
    );
  });
});
