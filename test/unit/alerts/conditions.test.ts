import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  balanceProofConditions,
  chainLagConditions,
  chainStalledConditions,
  type FindingRow,
  findingConditions,
  type ProofRow,
  safeDetails,
} from '../../../src/alerts/conditions.ts';
import { scrubMessage } from '../../../src/alerts/evaluateAlerts.ts';
import { type AlertMessage, signAlertBody, slackText } from '../../../src/alerts/notifiers.ts';
import { loadAlertRoutes } from '../../../src/alerts/routes.ts';
import { createManualClock } from '../../../src/clock.ts';

const at = new Date('2026-03-01T10:00:00Z');

function finding(over: Partial<FindingRow> = {}): FindingRow {
  return {
    kind: 'amount_mismatch',
    severity: 'critical',
    storeId: 'st_a',
    refType: 'intent',
    refId: 'pi_1',
    details: { expected: '10.00', actual: '9.50' },
    firstSeenAt: at,
    resolvedAt: null,
    ackedAt: null,
    ...over,
  };
}

function proof(over: Partial<ProofRow> = {}): ProofRow {
  return {
    chainId: 11155111,
    token: '0xAbC',
    symbol: 'USDC',
    wallet: '0xWaLLet',
    role: 'merchant',
    ok: true,
    error: null,
    ledgerBalance: '1000',
    chainBalance: '1000',
    provedAt: at,
    ...over,
  };
}

describe('findingConditions', () => {
  it('behavior: open unacked warning and critical findings, keyed by kind and ref', () => {
    const out = findingConditions([
      finding(),
      finding({ kind: 'stuck_intent', severity: 'warning', refId: 'pi_2', storeId: null }),
      finding({ kind: 'info_only', severity: 'info' }),
      finding({ kind: 'acked', ackedAt: at }),
      finding({ kind: 'gone', resolvedAt: at }),
    ]);
    expect(out.map((c) => [c.key, c.severity])).toEqual([
      ['finding:amount_mismatch:intent:pi_1', 'critical'],
      ['finding:stuck_intent:intent:pi_2', 'warning'],
    ]);
    expect(out[0]?.text).toContain('expected=10.00, actual=9.50');
    expect(out[0]?.labels).toEqual({
      source: 'finding',
      kind: 'amount_mismatch',
      ref_type: 'intent',
      ref_id: 'pi_1',
      store_id: 'st_a',
    });
    expect(out[1]?.labels).not.toHaveProperty('store_id');
  });

  it('behavior: balance_proof_failed on a wallet is left to the balance-proof condition', () => {
    const out = findingConditions([
      finding({ kind: 'balance_proof_failed', refType: 'wallet', refId: '1:0xtoken:0xwallet' }),
      finding({ kind: 'trial_balance_nonzero', refType: 'asset', refId: '1:0xtoken' }),
    ]);
    expect(out.map((c) => c.key)).toEqual(['finding:trial_balance_nonzero:asset:1:0xtoken']);
  });

  it('behavior: details under secret-looking keys, URLs, objects and long values stay out', () => {
    const details = safeDetails({
      api_secret: 'sk_live_abcdefghijklmnop',
      claim_url: 'https://pay.example/claim/abcdefghijklmnopqrstuvwxyz',
      note: 'see https://rpc.example/v3/KEY123456789 now',
      nested: { amount: '1' },
      long: 'x'.repeat(200),
      amount: '12.5',
      paid: true,
    });
    expect(details).toBe('note=see [url] now, amount=12.5, paid=true');
    expect(safeDetails(null)).toBe('');
    expect(safeDetails(['a'])).toBe('');
  });
});

describe('balanceProofConditions', () => {
  it('behavior: false is critical, null is a warning, ok is nothing; keys lower-case', () => {
    const out = balanceProofConditions([
      proof(),
      proof({ ok: false, chainBalance: '900', token: '0xDeF' }),
      proof({ ok: null, chainBalance: null, error: 'rpc https://rpc.example/key/abc failed', wallet: '0xB' }),
    ]);
    expect(out.map((c) => [c.key, c.severity])).toEqual([
      ['balance_proof:11155111:0xdef:0xwallet', 'critical'],
      ['balance_proof:11155111:0xabc:0xb', 'warning'],
    ]);
    expect(out[0]?.text).toContain('ledger 1000, balanceOf 900');
    expect(out[1]?.text).toContain('rpc [url] failed');
    expect(out[1]?.text).not.toContain('rpc.example');
  });
});

describe('chainLagConditions', () => {
  it('behavior: above the threshold only; an unknown head is no lag', () => {
    const out = chainLagConditions(
      [
        { chainId: 1, blockNumber: 100n, headBlock: 151n },
        { chainId: 2, blockNumber: 100n, headBlock: 150n },
        { chainId: 3, blockNumber: 100n, headBlock: null },
      ],
      50,
    );
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ key: 'chain_lag:1', severity: 'warning', labels: { chain_id: '1' } });
    expect(out[0]?.title).toContain('51 blocks');
  });
});

describe('chainStalledConditions', () => {
  const now = new Date('2026-03-01T10:00:00Z');
  const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);

  it('behavior: over the threshold since the last pass, on followed chains only, critical', () => {
    const out = chainStalledConditions(
      [
        { chainId: 1, blockNumber: 100n, headBlock: 100n, updatedAt: ago(11) },
        { chainId: 2, blockNumber: 100n, headBlock: 100n, updatedAt: ago(10) },
        { chainId: 3, blockNumber: 100n, headBlock: null, updatedAt: ago(600) },
        { chainId: 4, blockNumber: 100n, headBlock: null, updatedAt: ago(30) },
      ],
      new Set([1, 2, 4]),
      now,
      10 * 60_000,
    );
    expect(out.map((c) => [c.key, c.severity])).toEqual([
      ['chain_stalled:1', 'critical'],
      ['chain_stalled:4', 'critical'],
    ]);
    expect(out[0]?.text).toContain('11 minutes ago (threshold 10), at block 100, head 100 as then seen');
    expect(out[1]?.text).toContain('30 minutes ago (threshold 10), at block 100:');
    expect(out[0]?.labels).toEqual({ source: 'chain_stalled', chain_id: '1' });
  });
});

describe('messages', () => {
  const message: AlertMessage = {
    id: 'k|t|firing|0',
    event: 'firing',
    key: 'finding:x:intent:pi_1',
    severity: 'critical',
    title: 'Finding x',
    text: 'carries SECRET-VALUE-123 and https://pay.example/claim/abcdefghijklmnopqrstuv',
    labels: { note: 'SECRET-VALUE-123' },
    first_fired_at: at.toISOString(),
    resolved_at: null,
    sent_at: at.toISOString(),
  };

  it('behavior: scrubMessage removes known secret values and claim URLs everywhere', () => {
    const out = JSON.stringify(scrubMessage(message, ['SECRET-VALUE-123', 'short']));
    expect(out).not.toContain('SECRET-VALUE-123');
    expect(out).not.toContain('abcdefghijklmnopqrstuv');
    expect(out).toContain('[redacted]');
  });

  it('behavior: the signature is HMAC-SHA256 over "<timestamp>.<body>"', () => {
    const body = JSON.stringify(message);
    const ts = Math.floor(createManualClock(at).now().getTime() / 1000);
    const expected = createHmac('sha256', 'k'.repeat(32)).update(`${ts}.${body}`).digest('hex');
    expect(signAlertBody('k'.repeat(32), ts, body)).toBe(`sha256=${expected}`);
  });

  it('behavior: Slack text names the event and severity', () => {
    expect(slackText(message)).toBe(`*FIRING [critical]* Finding x\n${message.text}`);
    expect(slackText({ ...message, event: 'reminder' })).toMatch(/^\*STILL FIRING \[critical\]\*/);
    expect(slackText({ ...message, event: 'resolved' })).toMatch(/^\*RESOLVED \[critical\]\*/);
  });
});

describe('loadAlertRoutes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-routes-'));

  it('behavior: a valid file gives notifiers per severity', () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify({ critical: ['webhook', 'slack'], warning: ['webhook'] }));
    expect(loadAlertRoutes(file)).toEqual({
      routes: { critical: ['webhook', 'slack'], warning: ['webhook'] },
      problems: [],
    });
  });

  it('error: unknown notifier, unknown severity, unreadable file', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ critical: ['pager'], urgent: ['webhook'] }));
    const bad = loadAlertRoutes(file);
    expect(bad.routes).toBeUndefined();
    expect(bad.problems).toHaveLength(2);
    expect(bad.problems.every((p) => p.startsWith('ALERT_ROUTES_FILE: '))).toBe(true);
    expect(loadAlertRoutes(join(dir, 'missing.json')).problems[0]).toMatch(/cannot read/);
  });
});
