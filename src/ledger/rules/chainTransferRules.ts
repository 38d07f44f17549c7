/**
 * Posting rules for facts from the chain: docs/accounting.md, rule 2 (a final transfer proves a
 * confirmed payment), rule 3 (a proven transfer was orphaned by a reorg) and rule 9 (a transfer
 * into or out of a watched wallet that matches nothing), with its one exception: a payment the
 * service sent back to its payer clears the suspense its arrival was booked to. Pure: the same
 * fact always gives the same outcome and the same idempotency key.
 *
 * Glossary
 * - transfer: one ERC-20 Transfer log in one block (`ChainTransferFact`); the caller passes only
 *   final ones (at or below the chain's finality) to rules 2 and 9;
 * - accepted token: the chain registry's USDT or USDC for that chain and contract; the caller
 *   passes it, or null when the contract is not accepted: such a transfer is never money to us;
 * - watched wallet: the merchant wallet (tx_to, account assets:wallet) or the custody wallet
 *   (assets:custody) of a store;
 * - inclusion: a transfer in one block; a reorg that moves it to another block is a new inclusion
 *   and so a new idempotency key.
 */

import type { FindingDraft } from '../../findings/finding.ts';
import { formatDecimalAmount } from '../../money/decimalAmount.ts';
import { account, type Token } from '../accounts.ts';
import type { RuleOutcome } from '../entryDraft.ts';
import {
  assertTokenOfTransfer,
  assertTransferShape,
  type ChainTransferFact,
  chainInclusionKeyPart,
  chainTransferDetails,
  chainTransferId,
  sameAddress,
} from './chainTransferFact.ts';
import { claimLinkClaimedKey, claimLinkFundingFeeKey, claimLinkRefundedKey } from './claimLinkRules.ts';
import { credit, debit, draftEntry } from './postingLines.ts';

/** Rule 2 input: a final transfer that should pay a confirmed intent. */
export interface PaymentProofInput {
  storeId: string;
  intentId: string;
  /** tx_hash_2 when routed through a temporary wallet, tx_hash when paid directly. */
  transfer: ChainTransferFact;
  /** Accepted token of `transfer.tokenAddress` on `transfer.chainId`, or null when not accepted. */
  token: Token | null;
  /** What the intent promises the merchant wallet: its token, tx_to and N as booked by rule 1. */
  expected: { token: Token; recipient: `0x${string}`; amount: bigint };
  /**
   * What in_transit holds for the intent, when the transfer is booked at its own value although
   * it differs from N (a lone log of another amount; the caller raises the critical finding). A
   * transfer above it clears only this much from in_transit and books the excess to
   * assets:suspense, as money nobody explained, so in_transit never turns negative.
   */
  inTransit?: bigint;
}

export type WatchedWalletRole = 'merchant' | 'custody';

/** Rule 9 input: a final transfer touching a watched wallet that no intent or link claims. */
export interface UnmatchedTransferInput {
  storeId: string;
  transfer: ChainTransferFact;
  /** Accepted token of `transfer.tokenAddress` on `transfer.chainId`, or null when not accepted. */
  token: Token | null;
  wallet: { address: `0x${string}`; role: WatchedWalletRole };
}

/**
 * A payment into the merchant wallet that the service sent back whole to the wallet it came from
 * (SEND_BACK of an underpaid or rejected direct payment): its arrival matched no confirmed intent
 * and went to suspense (rule 9); the return clears that suspense instead of being an owner
 * transfer.
 */
export interface PaymentReturnedInput {
  storeId: string;
  intentId: string;
  /** The transfer out of the merchant wallet back to the payer. */
  returned: ChainTransferFact;
  /** The intent's payment into the merchant wallet that it returns. */
  paid: ChainTransferFact;
  /** Accepted token of both transfers. */
  token: Token;
}

/** What the ledger booked from one inclusion of a transfer, for rule 3. */
export type ChainEntryRole =
  | { kind: 'payment_proof' }
  | { kind: 'payment_returned' }
  | { kind: 'transfer_in_unmatched' }
  | { kind: 'transfer_out_unmatched' }
  | { kind: 'claim_link_funding_fee'; claimLinkId: string }
  | { kind: 'claim_link_claimed'; claimLinkId: string }
  | { kind: 'claim_link_refunded'; claimLinkId: string };

/** Rule 3 input: a transfer whose block was orphaned, as it was stored (old block hash). */
export interface ReorgInput {
  transfer: ChainTransferFact;
  /** What was booked from this inclusion, or null when nothing was. */
  posted: ChainEntryRole | null;
}

/** Rule 3 never writes an entry of its own; it names the entry the poster must reverse. */
export interface ReorgDecision extends RuleOutcome {
  entry: null;
  reverse: string | null;
}

export function paymentProofKey(transfer: ChainTransferFact): string {
  return `chain:proof:${chainInclusionKeyPart(transfer)}`;
}

/**
 * The key of one intent's share of a log that pays several intents (rule 2, "Pieces and bundles"):
 * one entry per (inclusion, intent).
 */
export function paymentShareKey(transfer: ChainTransferFact, intentId: string): string {
  return `${paymentProofKey(transfer)}:${intentId}`;
}

export function paymentReturnedKey(returned: ChainTransferFact): string {
  return `chain:returned:${chainInclusionKeyPart(returned)}`;
}

export function unmatchedTransferKey(transfer: ChainTransferFact, direction: 'in' | 'out'): string {
  return `chain:unmatched_${direction}:${chainInclusionKeyPart(transfer)}`;
}

/** The idempotency key of the entry a rule booked from this inclusion in the given role. */
export function chainEntryKey(transfer: ChainTransferFact, role: ChainEntryRole): string {
  switch (role.kind) {
    case 'payment_proof':
      return paymentProofKey(transfer);
    case 'payment_returned':
      return paymentReturnedKey(transfer);
    case 'transfer_in_unmatched':
      return unmatchedTransferKey(transfer, 'in');
    case 'transfer_out_unmatched':
      return unmatchedTransferKey(transfer, 'out');
    case 'claim_link_funding_fee':
      return claimLinkFundingFeeKey(role.claimLinkId, transfer);
    case 'claim_link_claimed':
      return claimLinkClaimedKey(role.claimLinkId, transfer);
    case 'claim_link_refunded':
      return claimLinkRefundedKey(role.claimLinkId, transfer);
  }
}

function transferRef(transfer: ChainTransferFact): FindingDraft['ref'] {
  return { type: 'chain_transfer', id: chainTransferId(transfer) };
}

function sameToken(a: Token, b: Token): boolean {
  return a.chainId === b.chainId && sameAddress(a.address, b.address);
}

/**
 * Rule 2: debit wallet N, credit in_transit N, when the transfer matches the intent's token,
 * recipient and amount. Otherwise no entry and one finding per mismatch (`payment_unknown_token`,
 * `token_mismatch`, `recipient_mismatch`, `amount_mismatch`). With `inTransit` (a lone log of
 * another amount, booked at its value): a value above it credits in_transit that much and
 * suspense the rest.
 */
export function paymentProven(input: PaymentProofInput): RuleOutcome {
  const { transfer, token, expected } = input;
  assertTransferShape(transfer);
  if (token !== null) assertTokenOfTransfer(token, transfer);
  const ref: FindingDraft['ref'] = { type: 'checkout_intent', id: input.intentId };
  const base = { expected_token: expected.token.symbol, ...chainTransferDetails(transfer) };
  const findings: FindingDraft[] = [];
  if (token === null) {
    findings.push({
      // Not rule 1's `unknown_token` on the same intent (a confirmation in a token the registry
      // does not know, resolved when rule 1 books): sharing its kind, a replay of rule 1 closed
      // this one, the only sign that the payment was made in a fake token.
      kind: 'payment_unknown_token',
      severity: 'warning',
      ref,
      details: { ...base, what: 'payment transfer of a contract the chain registry does not accept' },
    });
  } else if (!sameToken(token, expected.token)) {
    findings.push({
      kind: 'token_mismatch',
      severity: 'warning',
      ref,
      details: { ...base, token: token.symbol },
    });
  }
  if (!sameAddress(transfer.to, expected.recipient)) {
    findings.push({
      kind: 'recipient_mismatch',
      severity: 'warning',
      ref,
      details: { ...base, expected_recipient: expected.recipient.toLowerCase() },
    });
  }
  if (transfer.amount !== expected.amount) {
    const fmt = (u: bigint) => formatDecimalAmount(u, expected.token.decimals);
    findings.push({
      kind: 'amount_mismatch',
      severity: 'warning',
      ref,
      details: { ...base, expected_amount: fmt(expected.amount), transferred: fmt(transfer.amount) },
    });
  }
  if (findings.length > 0) return { entry: null, findings };

  const acct = (kind: 'assets:wallet' | 'assets:in_transit' | 'assets:suspense') =>
    account(kind, input.storeId, expected.token);
  const excess =
    input.inTransit !== undefined && transfer.amount > input.inTransit
      ? transfer.amount - input.inTransit
      : 0n;
  const entry = draftEntry(
    {
      idempotencyKey: paymentProofKey(transfer),
      kind: 'chain.payment_proven',
      occurredAt: transfer.occurredAt,
      storeId: input.storeId,
      ref,
      metadata: chainTransferDetails(transfer),
    },
    [
      debit(acct('assets:wallet'), transfer.amount),
      ...(transfer.amount > excess ? [credit(acct('assets:in_transit'), transfer.amount - excess)] : []),
      ...(excess > 0n ? [credit(acct('assets:suspense'), excess)] : []),
    ],
  );
  return { entry, findings: [] };
}

/** Rule 2 input: an intent's share of the excess another intent's proof of the same log put in suspense. */
export interface PaymentShareInput {
  storeId: string;
  intentId: string;
  transfer: ChainTransferFact;
  token: Token;
  /** What the intent takes of the excess, above zero and at most the excess. */
  amount: bigint;
  /** The intent whose proof holds the excess. */
  excessOf: string;
}

/**
 * Rule 2 for a log that pays several intents, after the first took it whole (its N to in_transit,
 * the excess to suspense): another intent's share moves from suspense to its in_transit. Debit
 * assets:suspense, credit assets:in_transit, kind chain.payment_proven, key per (inclusion,
 * intent); the wallet was debited once, with the log's whole value, by the first proof.
 */
export function paymentShareFromExcess(input: PaymentShareInput) {
  const { transfer, token } = input;
  assertTransferShape(transfer);
  assertTokenOfTransfer(token, transfer);
  if (input.amount <= 0n || input.amount > transfer.amount) {
    throw new RangeError(`share ${input.amount} of transfer ${chainTransferId(transfer)} out of range`);
  }
  const entry = draftEntry(
    {
      idempotencyKey: paymentShareKey(transfer, input.intentId),
      kind: 'chain.payment_proven',
      occurredAt: transfer.occurredAt,
      storeId: input.storeId,
      ref: { type: 'checkout_intent', id: input.intentId },
      metadata: { ...chainTransferDetails(transfer), share_of_excess_of: input.excessOf },
    },
    [
      debit(account('assets:suspense', input.storeId, token), input.amount),
      credit(account('assets:in_transit', input.storeId, token), input.amount),
    ],
  );
  if (!entry) throw new Error(`share of transfer ${chainTransferId(transfer)} drafted no entry`);
  return entry;
}

/**
 * Rule 3: an inclusion that was booked is orphaned. Names the entry to reverse (null when nothing
 * was booked from it) and reports `reorged_transfer`. If the transfer is re-included in another
 * block, the rule that booked it runs again and gets a new key.
 */
export function reorgReversal(input: ReorgInput): ReorgDecision {
  const reverse = input.posted === null ? null : chainEntryKey(input.transfer, input.posted);
  return {
    entry: null,
    reverse,
    findings: [
      {
        kind: 'reorged_transfer',
        severity: 'warning',
        ref: transferRef(input.transfer),
        details: {
          ...chainTransferDetails(input.transfer),
          booked_as: input.posted?.kind ?? null,
          reversed_entry: reverse,
        },
      },
    ],
  };
}

/**
 * Rule 9: into the watched wallet: debit its account (assets:wallet or assets:custody) X, credit
 * assets:suspense X, finding `unmatched_transfer_in`; out of it: debit equity:owner_transfers X,
 * credit its account X, finding `unmatched_transfer_out`. A contract that is not accepted books
 * nothing (finding `unknown_token`, info: airdropped spam tokens are common). A zero-value
 * transfer (address-poisoning spam) or a wallet sending to itself moves nothing and reports nothing.
 */
export function unmatchedTransfer(input: UnmatchedTransferInput): RuleOutcome {
  const { transfer, token, wallet } = input;
  assertTransferShape(transfer);
  if (token !== null) assertTokenOfTransfer(token, transfer);
  const into = sameAddress(transfer.to, wallet.address);
  const outOf = sameAddress(transfer.from, wallet.address);
  if (!into && !outOf) {
    throw new RangeError(
      `transfer ${chainTransferId(transfer)} neither enters nor leaves watched wallet ${wallet.address}`,
    );
  }
  if ((into && outOf) || transfer.amount === 0n) return { entry: null, findings: [] };

  const direction = into ? 'in' : 'out';
  const ref = transferRef(transfer);
  const details = {
    wallet: wallet.address.toLowerCase(),
    wallet_role: wallet.role,
    ...chainTransferDetails(transfer),
  };
  if (token === null) {
    return {
      entry: null,
      findings: [{ kind: 'unknown_token', severity: 'info', ref, details: { ...details, direction } }],
    };
  }
  const walletAccount = account(
    wallet.role === 'merchant' ? 'assets:wallet' : 'assets:custody',
    input.storeId,
    token,
  );
  const X = transfer.amount;
  const lines =
    direction === 'in'
      ? [debit(walletAccount, X), credit(account('assets:suspense', input.storeId, token), X)]
      : [debit(account('equity:owner_transfers', input.storeId, token), X), credit(walletAccount, X)];
  const entry = draftEntry(
    {
      idempotencyKey: unmatchedTransferKey(transfer, direction),
      kind: direction === 'in' ? 'chain.transfer_in_unmatched' : 'chain.transfer_out_unmatched',
      occurredAt: transfer.occurredAt,
      storeId: input.storeId,
      ref,
      metadata: details,
    },
    lines,
  );
  return {
    entry,
    findings: [
      {
        kind: direction === 'in' ? 'unmatched_transfer_in' : 'unmatched_transfer_out',
        severity: 'warning',
        ref,
        details: { ...details, amount: formatDecimalAmount(X, token.decimals), token: token.symbol },
      },
    ],
  };
}

/**
 * A payment sent back (see PaymentReturnedInput): debit assets:suspense X, credit the merchant
 * wallet X, where X is the returned amount. The caller matched the pair (same token and amount,
 * from the wallet the payment reached back to the wallet it came from); a pair that is not one
 * is a bug in that match, refused here.
 */
export function paymentReturned(input: PaymentReturnedInput): RuleOutcome {
  const { returned, paid, token } = input;
  assertTransferShape(returned);
  assertTransferShape(paid);
  assertTokenOfTransfer(token, returned);
  if (
    !sameAddress(returned.from, paid.to) ||
    !sameAddress(returned.to, paid.from) ||
    !sameAddress(returned.tokenAddress, paid.tokenAddress) ||
    returned.amount !== paid.amount ||
    returned.chainId !== paid.chainId
  ) {
    throw new RangeError(
      `transfer ${chainTransferId(returned)} does not send payment ${chainTransferId(paid)} back ` +
        '(same chain, token and amount, from its recipient to its sender)',
    );
  }
  const X = returned.amount;
  const entry = draftEntry(
    {
      idempotencyKey: paymentReturnedKey(returned),
      kind: 'chain.payment_returned',
      occurredAt: returned.occurredAt,
      storeId: input.storeId,
      // Like the arrival's rule-9 entry, a fact of the chain: the failed intent itself has no
      // entry (rule 4), and names it in the metadata.
      ref: transferRef(returned),
      metadata: {
        ...chainTransferDetails(returned),
        paid_tx_hash: paid.txHash.toLowerCase(),
        intent_id: input.intentId,
      },
    },
    [
      debit(account('assets:suspense', input.storeId, token), X),
      credit(account('assets:wallet', input.storeId, token), X),
    ],
  );
  return { entry, findings: [] };
}
