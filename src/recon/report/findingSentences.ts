/**
 * A finding as one sentence a finance person reads: what happened, with its amounts written for a
 * person ("1,250.00 USDT") and its transaction as a hash the HTML renderer links to the chain's
 * explorer. One function per kind (FINDING_KINDS); a kind this version does not know (written by
 * an older or newer daemon) gets a generic sentence that lists its details as "key: value", never
 * as JSON.
 *
 * Details come from the database (and, through webhooks and the chain, from outside): every value
 * is read defensively (a missing or odd-typed one makes a shorter sentence, never a crash), and
 * the renderer escapes every part.
 */
import type { ChainInfo } from '../../config/chainRegistry.ts';
import type { FindingRow } from '../../findings/finding.ts';
import { FINDING_KINDS, type FindingKind, isFindingKind } from '../../findings/findingKinds.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { type CheckoutStatus, checkoutStatusName } from '../../svc/models/checkoutStatus.ts';
import { formatAmount, formatDateTime, humanize } from './humanFormat.ts';

/** A transaction hash or an address, on a chain: rendered short, linked where the chain has an explorer. */
export interface ChainRef {
  type: 'tx' | 'address';
  value: string;
  chainId: number | null;
}

export type SentencePart = string | ChainRef;
export type Sentence = SentencePart[];

/** What a sentence may look up: chain names and token decimals (ChainRegistry fits). */
export interface ChainLookup {
  chain(chainId: number): Pick<ChainInfo, 'name' | 'tokens'> | undefined;
}

/** The sentence as plain text (hashes and addresses shortened). */
export function sentenceText(sentence: Sentence, shorten: (ref: ChainRef) => string): string {
  return sentence.map((p) => (typeof p === 'string' ? p : shorten(p))).join('');
}

/** Reads a finding's details for a sentence. */
class Facts {
  readonly details: Record<string, unknown>;
  constructor(
    readonly finding: FindingRow,
    private readonly chains: ChainLookup | undefined,
  ) {
    this.details =
      typeof finding.details === 'object' && finding.details !== null && !Array.isArray(finding.details)
        ? finding.details
        : {};
  }

  /** A string or number detail as text; null when absent or of another type. */
  text(key: string): string | null {
    const v = this.details[key];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' || typeof v === 'bigint') return String(v);
    return null;
  }

  chainId(): number | null {
    const v = Number(this.details.chain_id ?? Number.NaN);
    return Number.isInteger(v) && v > 0 ? v : null;
  }

  /** "Ethereum", "chain 31337", or null without a chain id. */
  chainName(): string | null {
    const id = this.chainId();
    if (id === null) return null;
    return this.chains?.chain(id)?.name ?? `chain ${id}`;
  }

  token(key = 'token'): string | null {
    return this.text(key);
  }

  /** "1,250.00 USDT" from a decimal detail (token units); the token from `tokenKey`. */
  amount(key: string, tokenKey = 'token'): string | null {
    const value = this.text(key);
    if (value === null) return null;
    const token = this.token(tokenKey);
    return `${formatAmount(value)}${token ? ` ${token}` : ''}`;
  }

  /** A base-unit detail as token units when the registry knows the token's decimals, else "N base units". */
  baseUnits(key: string, symbol: string | null): string | null {
    const value = this.text(key);
    if (value === null) return null;
    const id = this.chainId();
    const decimals =
      id === null || symbol === null
        ? undefined
        : this.chains?.chain(id)?.tokens.find((t) => t.symbol === symbol)?.decimals;
    if (decimals === undefined || !/^-?\d+$/.test(value)) return `${formatAmount(value, 0)} base units`;
    const units = BigInt(value);
    const text =
      units < 0n ? `-${formatDecimalAmount(-units, decimals)}` : formatDecimalAmount(units, decimals);
    return `${formatAmount(text)} ${symbol}`;
  }

  time(key: string): string | null {
    const v = this.text(key);
    return v === null ? null : formatDateTime(v);
  }

  tx(key = 'tx_hash'): ChainRef | null {
    const v = this.text(key);
    return v === null ? null : { type: 'tx', value: v, chainId: this.chainId() };
  }

  address(key: string): ChainRef | null {
    const v = this.text(key);
    return v === null ? null : { type: 'address', value: v, chainId: this.chainId() };
  }
}

type Piece = SentencePart | null | undefined | false;

/** Joins pieces, dropping the absent ones. */
function s(...pieces: Piece[]): Sentence {
  return pieces.filter((p): p is SentencePart => p !== null && p !== undefined && p !== false);
}

/** " (tx 0xab…cd)" when the finding names a transaction. */
function txNote(f: Facts, key = 'tx_hash'): Piece[] {
  const tx = f.tx(key);
  return tx ? [' (tx ', tx, ')'] : [];
}

function on(f: Facts): string {
  const chain = f.chainName();
  return chain ? ` on ${chain}` : '';
}

function intent(f: Facts): string {
  return `Intent ${f.finding.refId}`;
}

function statusName(value: string | null): string | null {
  if (value === null) return null;
  try {
    return checkoutStatusName(Number(value) as CheckoutStatus);
  } catch {
    return `status ${value}`;
  }
}

/** "chain_id: booked 1, read 56; tx_to: booked 0x…, read 0x…" from {field: {a, b}}. */
function differences(value: unknown, a: string, b: string, aLabel: string, bLabel: string): string | null {
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) return value.map((v) => plain(v)).join('; ');
  const items = Object.entries(value as Record<string, unknown>).map(([field, pair]) => {
    const p = (typeof pair === 'object' && pair !== null ? pair : {}) as Record<string, unknown>;
    return `${humanize(field)}: ${aLabel} ${plain(p[a])}, ${bLabel} ${plain(p[b])}`;
  });
  return items.length === 0 ? null : items.join('; ');
}

/** Any JSON value as readable text: no braces, no quotes. */
export function plain(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (typeof value === 'string') return value === '' ? '(empty)' : value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.map(plain).join(', ');
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length === 0
      ? 'none'
      : `(${entries.map(([k, v]) => `${humanize(k)} ${plain(v)}`).join(', ')})`;
  }
  return String(value);
}

type SentenceOf = (f: Facts) => Sentence;

function paidVersusRequested(more: boolean): SentenceOf {
  return (f) =>
    s(
      `${intent(f)} was paid ${f.amount('actual_paid_amount') ?? 'an unknown amount'} of the `,
      `${f.amount('amount_coins') ?? 'unknown amount'} requested${on(f)}: `,
      `${f.amount('difference') ?? 'a difference'} ${more ? 'more' : 'short'}.`,
    );
}

function payingTransfer(f: Facts): string {
  return `The transfer paying intent ${f.finding.refId}`;
}

function refundOverdue(how: string): SentenceOf {
  return (f) =>
    s(
      `Claim link ${f.finding.refId}`,
      f.text('reference_id') && ` (reference ${f.text('reference_id')})`,
      f.text('amount') &&
        `, ${formatAmount(f.text('amount') ?? '')}${f.token('coin') ? ` ${f.token('coin')}` : ''},`,
      ` was ${how}`,
      f.time('closed_at') && ` on ${f.time('closed_at')}`,
      f.text('grace_hours')
        ? `; its refund is not proven after ${f.text('grace_hours')} hours.`
        : '; its refund is not proven within the grace period.',
    );
}

export const FINDING_SENTENCES: Record<FindingKind, SentenceOf> = {
  underpaid: paidVersusRequested(false),
  overpaid: paidVersusRequested(true),
  fee_arithmetic_mismatch: (f) =>
    s(
      `The service's figures for intent ${f.finding.refId} do not add up: paid `,
      `${f.amount('actual_paid_amount') ?? '?'} minus the fee ${f.amount('service_fee_amount') ?? '?'} is `,
      `${f.amount('expected_net_income_amount') ?? '?'}, but it reported a net of ${f.amount('net_income_amount') ?? '?'}.`,
      f.details.posted === false && ' Not booked yet: it waits for the chain to prove the net amount.',
    ),
  unknown_token: (f) =>
    f.finding.refType === 'checkout_intent'
      ? s(
          `${intent(f)} was confirmed in a token the chain registry does not accept (`,
          f.text('coin_symbol') ?? 'unnamed',
          f.address('coin_contract') && ' at ',
          f.address('coin_contract'),
          `${on(f)}); it is not booked.`,
        )
      : s(
          'A token the chain registry does not accept (',
          f.address('token_address') ?? 'unknown contract',
          `) moved ${f.text('direction') === 'out' ? 'out of' : 'into'} the ${f.text('wallet_role') ?? 'watched'} wallet `,
          f.address('wallet') ?? '',
          on(f),
          ...txNote(f),
          '.',
        ),
  confirmed_without_amounts: (f) =>
    s(
      `${intent(f)} was read as confirmed without its paid, fee and net amounts; it is not booked and is polled again.`,
    ),
  amount_format_error: (f) =>
    s(
      `${intent(f)} has an amount the books cannot hold (${f.text('amount') ?? '?'} ${f.token() ?? ''}`.trimEnd(),
      `: ${f.text('reason') ?? `finer than the token's ${f.text('decimals') ?? '?'} decimals`}); it is not booked.`,
    ),
  confirmed_amounts_changed: (f) =>
    s(
      `The service changed the amounts of intent ${f.finding.refId} after they were booked`,
      f.text('entry_id') && ` (entry ${f.text('entry_id')})`,
      '; the books keep the booked amounts until a person decides on a reversal.',
    ),
  confirmed_facts_changed: (f) =>
    s(
      `A read of intent ${f.finding.refId} contradicts its booked confirmation`,
      differences(f.details.differences, 'booked', 'observed', 'booked', 'read') &&
        ` (${differences(f.details.differences, 'booked', 'observed', 'booked', 'read')})`,
      '; the books keep what was booked.',
    ),
  confirmed_then_failed: (f) =>
    s(
      `${intent(f)} was confirmed, then reported ${f.text('status_name') ?? statusName(f.text('status')) ?? 'failed'}; its booking was reversed.`,
    ),
  proven_then_failed: (f) => {
    const proven = Array.isArray(f.details.proven)
      ? (f.details.proven as Record<string, unknown>[])
          .map((p) => `${formatAmount(String(p?.amount ?? '?'))}${p?.token ? ` ${String(p.token)}` : ''}`)
          .join(' and ')
      : null;
    return s(
      `${intent(f)} was reported ${f.text('status_name') ?? statusName(f.text('status')) ?? 'failed'} after its payment`,
      proven && ` of ${proven}`,
      ' was proven on chain; the money waits in suspense until the service confirms the intent again or a person decides.',
    );
  },
  terminal_status_changed: (f) =>
    s(
      `${intent(f)} turned from ${statusName(f.text('from')) ?? 'a failure status'} to ${statusName(f.text('to')) ?? 'another status'}`,
      f.text('source') && ` (by ${f.text('source')})`,
      '; it was booked again as a new revision.',
    ),
  webhook_api_mismatch: (f) =>
    s(
      `A webhook${f.text('webhook_id') ? ` (${f.text('webhook_id')})` : ''} disagrees with the service's API about intent ${f.finding.refId}`,
      differences(f.details.differences, 'webhook', 'api', 'webhook', 'API') &&
        `: ${differences(f.details.differences, 'webhook', 'api', 'webhook', 'API')}`,
      '.',
    ),
  intent_poll_refused: (f) =>
    s(
      `The service refuses polls of intent ${f.finding.refId}`,
      ` (${[f.text('error'), f.text('code') && `code ${f.text('code')}`].filter(Boolean).join(' ') || 'a permanent error'}`,
      f.text('message') && `: ${f.text('message')}`,
      ').',
    ),
  malformed_webhook: (f) =>
    s(`Webhook ${f.finding.refId} could not be read`, f.text('reason') && `: ${f.text('reason')}`, '.'),
  webhook_for_unknown_intent: (f) =>
    s(
      `Webhook ${f.finding.refId} names intent ${f.text('intent_id') ?? '(none)'}, which the service kept refusing`,
      f.text('attempts') &&
        ` (${f.text('attempts')} attempts${f.text('code') ? `, code ${f.text('code')}` : ''})`,
      '.',
    ),
  webhook_unprocessable: (f) =>
    s(
      `Webhook ${f.finding.refId}`,
      f.text('intent_id') && ` for intent ${f.text('intent_id')}`,
      ' cannot be processed',
      f.text('reason') && `: ${f.text('reason')}`,
      '.',
    ),
  unhandled_webhook_event: (f) =>
    s(
      `Webhook ${f.finding.refId}`,
      f.text('endpoint') && ` (${f.text('endpoint')})`,
      ` is an event stablebooks does not handle: ${f.text('event') ?? 'unnamed'}.`,
    ),
  intent_creation_unresolved: (f) =>
    s(
      `An intent creation`,
      f.text('order_id') && ` for order ${f.text('order_id')}`,
      f.time('requested_at') && ` (requested ${f.time('requested_at')})`,
      ` has ${f.text('outcome') === 'pending' ? 'been pending too long' : 'an unknown outcome'}, and no tracked intent carries its order id.`,
    ),
  missing_webhook: (f) =>
    f.finding.refType === 'claim_link'
      ? s(
          `The refund of claim link ${f.finding.refId} was proven`,
          f.time('refunded_at') && ` on ${f.time('refunded_at')}`,
          ', but no cancelled webhook for it arrived.',
        )
      : s(
          `${intent(f)} was confirmed`,
          f.time('confirmed_at') && ` on ${f.time('confirmed_at')}`,
          f.amount('actual_paid_amount') && ` (${f.amount('actual_paid_amount')} paid)`,
          ', but no webhook for it arrived.',
        ),
  stuck_intent: (f) =>
    s(
      `${intent(f)} has been ${statusName(f.text('status')) ?? 'short of a final status'}`,
      f.text('hours') && ` for ${f.text('hours')} hours`,
      f.time('since') && ` (since ${f.time('since')})`,
      '.',
    ),
  amount_mismatch: (f) => {
    if (f.finding.refType === 'claim_link')
      return s(
        `Claim link ${f.finding.refId} was claimed for ${f.amount('transferred') ?? 'another amount'}, not its ${f.amount('amount') ?? 'amount'}`,
        ...txNote(f),
        '.',
      );
    if (f.text('expected_amount') !== null)
      return s(
        `${payingTransfer(f)} carried ${f.amount('transferred') ?? 'another amount'}, not the ${f.amount('expected_amount')} expected`,
        ...txNote(f),
        '.',
      );
    const webhooks =
      f.text('webhook_actual_paid_amount_min') === null
        ? null
        : f.text('webhook_actual_paid_amount_min') === f.text('webhook_actual_paid_amount_max')
          ? f.amount('webhook_actual_paid_amount_min')
          : `${formatAmount(f.text('webhook_actual_paid_amount_min') ?? '')} to ${f.amount('webhook_actual_paid_amount_max')}`;
    return s(
      `The paid amount of intent ${f.finding.refId} differs between sources: the API says ${f.amount('api_actual_paid_amount') ?? 'nothing'}`,
      webhooks && `, the webhooks ${webhooks}`,
      `, the chain ${f.amount('chain_amount') ?? 'nothing yet'}.`,
    );
  },
  payment_amount_mismatch: (f) =>
    s(
      `${payingTransfer(f)} carried ${f.amount('actual_amount') ?? 'another amount'} instead of ${f.amount('expected_amount') ?? 'the amount expected'}; it was booked at the chain's value`,
      f.amount('to_suspense') && `, the excess ${f.amount('to_suspense')} in suspense`,
      ...txNote(f),
      '.',
    ),
  payment_unknown_token: (f) =>
    s(
      `${payingTransfer(f)} is of a token the chain registry does not accept (`,
      f.address('token_address') ?? 'unknown contract',
      ')',
      ...txNote(f),
      '.',
    ),
  token_mismatch: (f) =>
    s(
      `${payingTransfer(f)} is in ${f.token() ?? 'another token'}, not the intent's token`,
      ...txNote(f),
      '.',
    ),
  recipient_mismatch: (f) =>
    s(
      `${payingTransfer(f)} went to `,
      f.address('to') ?? 'another address',
      ', not to ',
      f.address('expected_recipient') ?? "the intent's recipient",
      ...txNote(f),
      '.',
    ),
  recipient_not_store_wallet: (f) =>
    s(
      `${intent(f)} is paid to `,
      f.address('tx_to') ?? 'an address',
      `, which is not its store's merchant wallet${on(f)}`,
      f.address('store_wallet') && ' (',
      f.address('store_wallet'),
      f.address('store_wallet') && ')',
      '; the payment proves nothing of this intent',
      ...txNote(f),
      '.',
    ),
  payment_tx_not_found: (f) =>
    s(`The transaction paying intent ${f.finding.refId} has no receipt${on(f)}`, ...txNote(f), '.'),
  payment_tx_reverted: (f) =>
    s(
      `The transaction paying intent ${f.finding.refId} reverted`,
      f.text('block_number') && ` in block ${formatAmount(f.text('block_number') ?? '', 0)}`,
      ...txNote(f),
      '.',
    ),
  payment_transfer_missing: (f) =>
    s(`The transaction paying intent ${f.finding.refId} moved no token`, ...txNote(f), '.'),
  webhook_without_chain_proof: (f) =>
    s(
      `${intent(f)} was confirmed`,
      f.time('confirmed_at') && ` on ${f.time('confirmed_at')}`,
      `, but ${f.amount('waiting') ?? 'its payment'} still waits in in_transit for the chain's proof`,
      f.text('window_minutes') && ` after ${f.text('window_minutes')} minutes`,
      '.',
    ),
  unmatched_transfer_in: (f) =>
    s(
      `A transfer of ${f.amount('amount') ?? 'an amount'} into the ${f.text('wallet_role') ?? 'watched'} wallet of `,
      f.finding.storeId ?? f.address('wallet') ?? 'a store',
      ' matched no payment',
      ...txNote(f),
      '.',
    ),
  suspense_classification_superseded: (f) =>
    s(
      `A transfer ${f.text('classified_by') ? `${f.text('classified_by')} had` : 'a person had'} classified as `,
      f.text('classification') ?? 'something',
      ' was explained by a rule later; the classification was reversed',
      f.text('reason') && ` (${f.text('reason')})`,
      '.',
    ),
  unmatched_transfer_out: (f) =>
    s(
      `A transfer of ${f.amount('amount') ?? 'an amount'} out of the ${f.text('wallet_role') ?? 'watched'} wallet of `,
      f.finding.storeId ?? f.address('wallet') ?? 'a store',
      ' matched no payout or refund',
      ...txNote(f),
      '.',
    ),
  reorged_transfer: (f) =>
    s(
      'A booked transfer',
      f.text('booked_as') && ` (${humanize(f.text('booked_as') ?? '')})`,
      `${on(f)} left the chain in a reorganisation; its entries were reversed`,
      ...txNote(f),
      '.',
    ),
  reorg_beyond_finality: (f) =>
    s(
      `A reorganisation${on(f)} replaced blocks the books had treated as final`,
      f.text('lowest_block') && `, from block ${formatAmount(f.text('lowest_block') ?? '', 0)}`,
      f.text('depth') && ` (${f.text('depth')} blocks deep`,
      f.text('depth') && (f.text('finality_depth') ? `, finality depth ${f.text('finality_depth')})` : ')'),
      f.text('final_orphaned') && `: ${f.text('final_orphaned')} final transfers left the chain`,
      '; their entries were reversed and what the new chain holds was booked again. Check the finality setting of the chain and anything paid out on those transfers.',
    ),
  claim_link_create_mismatch: (f) =>
    s(
      `The service's answer to creating payout ${f.text('payout_id') ?? f.finding.refId}`,
      f.text('reference_id') && ` (reference ${f.text('reference_id')})`,
      ' differs from the request',
      f.details.differences !== undefined && `: ${plain(f.details.differences)}`,
      '.',
    ),
  claim_link_closed_on_replay: (f) =>
    s(
      `A replayed create of payout ${f.text('payout_id') ?? f.finding.refId}`,
      f.text('reference_id') && ` (reference ${f.text('reference_id')})`,
      ` reports the link already ${f.text('status') ?? 'closed'}; check that its claim or refund is booked.`,
    ),
  cancelled_outside_stablebooks: (f) =>
    s(
      `Claim link ${f.finding.refId} was cancelled at the service, not by stablebooks`,
      ...txNote(f, 'refund_tx_hash'),
      '.',
    ),
  claim_link_close_conflict: (f) =>
    s(
      `A cancel or expiry of claim link ${f.finding.refId} conflicts with how the books closed it`,
      f.text('what') && `: ${f.text('what')}`,
      '.',
    ),
  webhook_for_unknown_claim_link: (f) =>
    s(
      `A cancelled webhook names claim link ${f.text('claim_link_id') ?? f.finding.refId}`,
      f.text('reference_id') && ` (reference ${f.text('reference_id')})`,
      ', which matches no payout of the store',
      ...txNote(f, 'refund_tx_hash'),
      '.',
    ),
  refund_tx_hash_mismatch: (f) =>
    s(
      `The refund transaction a webhook names for claim link ${f.finding.refId} (`,
      f.tx('webhook') ?? 'none',
      ') differs from the one recorded (',
      f.tx('recorded') ?? 'none',
      ').',
    ),
  funding_mismatch: (f) =>
    s(
      `Claim link ${f.finding.refId} was funded with ${f.amount('funded_on_chain') ?? 'less'} on chain, `,
      `${f.amount('shortfall') ?? 'an amount'} short of its ${f.amount('amount') ?? 'amount'}`,
      ...txNote(f),
      '.',
    ),
  funding_matched_by_amount: (f) =>
    s(
      `A funding of ${f.text('funded') ? formatAmount(f.text('funded') ?? '') : 'an amount'} without a hash was matched by amount to claim link ${f.finding.refId}`,
      f.text('amount') && ` (${formatAmount(f.text('amount') ?? '')})`,
      Array.isArray(f.details.other_candidates) &&
        f.details.other_candidates.length > 0 &&
        `, one of ${f.details.other_candidates.length + 1} it could fund`,
      ...txNote(f),
      '.',
    ),
  funding_awaits_create_outcome: (f) =>
    s(
      `A custody outflow may fund payout ${f.text('reference_id') ?? f.finding.refId}`,
      f.text('amount') && ` (${formatAmount(f.text('amount') ?? '')})`,
      `, whose create outcome is ${f.text('create_outcome') ?? 'unknown'}: run the same payouts create again to learn it`,
      ...txNote(f),
      '.',
    ),
  claim_link_pool_refused: (f) =>
    s(
      `The funding of payout ${f.text('payout_id') ?? f.finding.refId} pays `,
      f.address('address') ?? 'an address',
      `, already a ${f.text('role') ?? 'known'} wallet; it is not taken as the link's pool`,
      ...txNote(f),
      '.',
    ),
  claimed_after_expiry: (f) =>
    s(
      `Claim link ${f.finding.refId} was claimed on chain`,
      f.amount('amount') && ` for ${f.amount('amount')}`,
      f.time('claimed_at') && ` on ${f.time('claimed_at')}`,
      ', after the books had expired it',
      f.time('expired_at') && ` (${f.time('expired_at')})`,
      '; the claim undoes the expiry',
      ...txNote(f),
      '.',
    ),
  claimed_after_cancel: (f) =>
    s(
      `Claim link ${f.finding.refId} was claimed on chain`,
      f.amount('amount') && ` for ${f.amount('amount')}`,
      f.time('claimed_at') && ` on ${f.time('claimed_at')}`,
      ', after the service had accepted its cancel',
      f.time('cancelled_at') && ` (${f.time('cancelled_at')})`,
      '; the claim undoes the cancel',
      ...txNote(f),
      '.',
    ),
  cancel_races_pool_outflow: (f) =>
    s(
      `Claim link ${f.finding.refId} was cancelled while money its pool sent is not booked yet`,
      f.text('tx_hash') && ` (transaction ${f.text('tx_hash')})`,
      '; it may be the claim, which the chain then books out of the receivable',
      '.',
    ),
  claim_link_unexplained_outflow: (f) =>
    s(
      `Money left the pool of claim link ${f.finding.refId}`,
      f.text('amount') && ` (link amount ${formatAmount(f.text('amount') ?? '')})`,
      ', which the books hold as claimed, cancelled or refunded already; nothing was booked',
      ...txNote(f),
      '.',
    ),
  claim_link_refund_unexpected: (f) =>
    s(
      `A refund arrived for claim link ${f.finding.refId}`,
      f.text('amount') && ` (link amount ${formatAmount(f.text('amount') ?? '')})`,
      ', whose books hold no receivable for it; it is booked to suspense',
      ...txNote(f),
      '.',
    ),
  refund_overdue: refundOverdue('cancelled'),
  expiry_refund_overdue: refundOverdue('expired'),
  claim_unproven: (f) =>
    s(
      `The service reports claim link ${f.finding.refId} ${f.text('link_status') ?? 'claimed'}`,
      f.time('since') && ` since ${f.time('since')}`,
      ', but no claim out of its pool is booked on chain; its amount stays in claim_pool.',
    ),
  balance_proof_failed: (f) => {
    const token = f.token();
    const wallet: Piece[] = [
      f.text('role') ? `The ${f.text('role')} wallet ` : 'The wallet ',
      f.address('wallet') ?? '(unnamed)',
      `${on(f)}${token ? ` (${token})` : ''}`,
    ];
    if (f.text('error') !== null && f.text('chain_balance') === null)
      return s(...wallet, ` could not be proven: ${f.text('error')}.`);
    return s(
      ...wallet,
      ` does not match the chain: the ledger says ${f.baseUnits('ledger_balance', token) ?? '?'}, the chain ${f.baseUnits('chain_balance', token) ?? '?'}`,
      f.text('block_number') && ` at block ${formatAmount(f.text('block_number') ?? '', 0)}`,
      '.',
    );
  },
  trial_balance_nonzero: (f) =>
    s(
      `The balances of ${f.token() ?? 'a token'} (${f.text('asset') ?? f.finding.refId}) do not net to zero: `,
      f.text('net') === null
        ? 'their net is not zero.'
        : `they are off by ${formatAmount(f.text('net') ?? '', 0)} base units.`,
    ),
  ledger_chain_broken: (f) =>
    s(
      `The ledger's hash chain breaks at seal ${f.text('seq') ?? '?'}`,
      f.text('entry_id') &&
        ` (entry ${f.text('entry_id')}, ${f.text('entry_kind') ?? 'unknown kind'}, ${f.text('entry_ref_type') ?? ''} ${f.text('entry_ref_id') ?? ''})`,
      `: ${f.text('reason') ?? 'it does not match the entries'}. The books were changed after they were written.`,
    ),
  valuation_rate_missing: (f) =>
    s(
      `No rate values ${f.text('asset') ?? 'a coin'} in ${f.text('currency') ?? 'the functional currency'} `,
      `on ${f.text('rate_date') ?? f.finding.refId}: its postings are unvalued (not zero) until a rate is imported `,
      '(stablebooks rates import) or a par policy is configured.',
    ),
};

/** The sentence of a kind this version does not know: the kind, its reference and every detail. */
export function genericSentence(finding: FindingRow): Sentence {
  const f = new Facts(finding, undefined);
  const items = Object.entries(f.details).map(([key, value]) => `${humanize(key)}: ${plain(value)}`);
  const kind = humanize(finding.kind);
  return s(
    `${kind.charAt(0).toUpperCase()}${kind.slice(1)} on ${humanize(finding.refType)} ${finding.refId}`,
    items.length > 0 ? ` (${items.join('; ')})` : '',
    '.',
  );
}

/** One finding as a sentence. */
export function findingSentence(finding: FindingRow, chains?: ChainLookup): Sentence {
  if (!isFindingKind(finding.kind)) return genericSentence(finding);
  return FINDING_SENTENCES[finding.kind](new Facts(finding, chains));
}

/** Every kind has a sentence of its own (checked by a test; the type checks it too). */
export const KINDS_WITH_SENTENCES: readonly FindingKind[] = FINDING_KINDS.filter(
  (kind) => typeof FINDING_SENTENCES[kind] === 'function',
);
