import { sql } from 'drizzle-orm';
import {
  allocate,
  allocatedTo,
  type LiveAllocation,
  releaseAllocations,
  transferAllocations,
} from '../chain/allocations.ts';
import { markApplied, type TransferRow, transferColumns, transferFact } from '../chain/transferRow.ts';
import { merchantWalletOf } from '../chain/watchedWallets.ts';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { StoreWallets } from '../config/stores.ts';
import type { DbExecutor } from '../db/database.ts';
import { executePrepared } from '../db/executePrepared.ts';
import { bookingRevision } from '../events/announcements.ts';
import { announcementId, type EventDraft, recordEvent, tokenData } from '../events/recordEvent.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { resolveFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import type { AccountCache } from '../ledger/ensureAccounts.ts';
import type { RuleOutcome } from '../ledger/entryDraft.ts';
import { type PostedEntry, postEntry, reverseEntry } from '../ledger/postEntry.ts';
import {
  type ChainTransferFact,
  chainTransferDetails,
  chainTransferId,
} from '../ledger/rules/chainTransferFact.ts';
import {
  paymentProven,
  paymentShareFromExcess,
  unmatchedTransferKey,
} from '../ledger/rules/chainTransferRules.ts';
import { checkoutConfirmedKey } from '../ledger/rules/checkoutRules.ts';
import { formatDecimalAmount, parseDecimalAmount, sameDecimalAmount } from '../money/decimalAmount.ts';
import { supersedeClassification } from '../suspense/classifySuspense.ts';
import { bookConfirmation } from './bookConfirmation.ts';
import { lockPayingLogs, type PayingLogs, type WalletLogs, walletLogs } from './payingLogs.ts';
import { DEFAULT_TOP_UP_GRACE_MS, lockTopUps, type TopUpQuery } from './topUpLogs.ts';

export interface ProofResult {
  /** The (first) rule-2 entry this call posted. */
  proven: PostedEntry | null;
  findings: FindingDraft[];
  /** The (first) chain_transfers row this call matched to the intent (as proof or mismatch), if any. */
  matchedRowId: string | null;
  /** Every row this call matched to the intent: one, or several when the payment was split. */
  matchedRowIds: string[];
}

/**
 * What rule 2 needs: the chain registry, the stores' wallets from STORES_FILE (a payment proves an
 * intent only into its own store's merchant wallet) and the account cache.
 */
export interface PaymentProofDeps {
  chains: ChainRegistry;
  stores: readonly StoreWallets[];
  accounts?: AccountCache;
  /** The settlement's grace: how long after its confirmation a top-up may be mined (rule 2). */
  graceMs?: number;
}

/** The intent's columns rule 2 reads; applyIntentSnapshot passes the row its update returned. */
export type IntentRow = {
  id: string;
  store_id: string;
  status: number | null;
  chain_id: string | null;
  coin_contract: string | null;
  coin_symbol: string | null;
  amount_coins: string | null;
  actual_paid_amount: string | null;
  service_fee_amount: string | null;
  net_income_amount: string | null;
  amount_cents: string | null;
  currency: number | null;
  currency_rate: string | null;
  tx_hash: string | null;
  tx_hash_2: string | null;
  tx_to: string | null;
  confirmed_at: Date | null;
};

/** The columns of IntentRow, as a select list of checkout_intents. */
export const intentRowColumns = sql.raw(
  'id, store_id, status, chain_id::text, coin_contract, coin_symbol, amount_coins, actual_paid_amount, ' +
    'service_fee_amount, net_income_amount, amount_cents::text, currency, currency_rate, tx_hash, tx_hash_2, ' +
    'tx_to, confirmed_at',
);

/**
 * Rule 2 for one confirmed intent: when the transfer that credits the merchant wallet (tx_hash_2
 * on the temporary-wallet route, tx_hash when paid directly) is final on chain and matches token,
 * recipient and N, debit wallet N, credit in_transit N. Called from both sides, whichever learns
 * last: the intent's confirmation (applyIntentSnapshot) and the transfer's finality (the chain
 * matcher). An intent whose reported P - F != N gets its rule-1 entry here, from the proven net.
 * A transfer booked to suspense before its intent was known (rule 9) is moved: that entry is
 * reversed and its finding resolved. Runs in the caller's transaction; the caller holds the
 * intent's row lock. Without a final transfer it does nothing: the money stays in in_transit.
 * One transaction may pay several intents (a batch payment): each takes a log no proof has taken,
 * the one of its own N first (docs/decisions.md, "One transaction can pay several intents"). Else
 * the transaction's one log into the wallet is booked at its own value with a critical
 * `payment_amount_mismatch` (the rest of N stays in in_transit for a person; an excess above N goes
 * to suspense, never a negative in_transit), and several free
 * logs whose sum is N prove it together (one rule-2 entry per log, each under its own inclusion's
 * key, so rule 3 unwinds each). Rule 1 is read from its live entry: one reversed by rule 4 holds
 * nothing in in_transit.
 *
 * Locks: the chain matcher locks the transfer row, then the intent; the intent's side locks the
 * intent, then the transfer with SKIP LOCKED. A transfer row another transaction holds is being
 * matched right now, and that matcher is waiting for this intent: it proves the payment once this
 * transaction commits. So the two sides never wait on each other in a cycle (no deadlock).
 */
export async function proveIntentPayment(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  intentId: string,
  /**
   * The intent as this transaction last wrote it (saves reading it again), and whether its
   * transaction had a final log when it was written (saves reading the logs when it had none).
   */
  known?: IntentRow & { has_final_logs?: boolean },
): Promise<ProofResult> {
  const claim = claimedPayment(intentId, known ?? (await readIntent(tx, intentId)));
  if (!claim) return noProof();
  // Read under the intent's lock either way: a transfer made final since the intent was written
  // is the chain matcher's to prove, and it waits for this lock (see Locks above).
  const logs = known?.has_final_logs === false ? [] : await finalLogs(tx, claim);
  if (alreadyDecided(logs, intentId)) return noProof();
  const foreign = notStoreWalletFinding(deps.stores, claim.intent);
  if (foreign) return noProof([foreign]);
  if (logs.length === 0) return noProof();
  const expected = await expectedPayment(tx, deps.chains, claim);
  const wallet = walletLogs(logs, intentId, claim.txTo, expected.token, expected.amounts);
  // Its transaction's logs were allocated before (a short proof of its own, or another intent's
  // lone log with an excess this intent may be owed): the rare path reads the allocations.
  if (revisitsAllocations(wallet, intentId)) return proveRemainder(tx, deps, claim, wallet, expected);
  if (wallet.free.length === 0) {
    return noProof(misdirectedPaymentFindings(deps.chains, claim, logs, wallet, expected));
  }
  const locked = await lockPayingLogs(tx, intentId, wallet, expected.amounts);
  const paying = (await withTopUp(tx, deps, claim, expected, locked)) ?? locked.paying;
  if (!paying) return noProof();
  const paid = paying.reduce((sum, l) => sum + BigInt(l.value), 0n);
  const rule1 = await settleWaitingRule1(tx, deps, claim, expected.inTransit, paid);
  if (rule1.inTransit === null || !expected.token) return noProof(rule1.findings);
  const proof = await bookProof(tx, deps, claim, paying, {
    token: expected.token,
    inTransit: rule1.inTransit,
    mismatch: paid !== rule1.inTransit,
    paid,
  });
  const matchedRowIds = paying.map((l) => l.id);
  return {
    proven: proof.proven,
    findings: [...rule1.findings, ...proof.findings],
    matchedRowId: matchedRowIds[0] ?? null,
    matchedRowIds,
  };
}

/**
 * The finding of an intent whose tx_to is not the merchant wallet STORES_FILE lists for the intent
 * row's store on its chain (another store's wallet, or none): a payment there proves nothing of
 * this intent's sale, so rule 2 never books it; null when tx_to is that wallet (or the intent names
 * no recipient or chain yet). Also read by the receipt verifier (verifyPayments).
 */
export function notStoreWalletFinding(
  stores: readonly StoreWallets[],
  intent: Pick<IntentRow, 'id' | 'store_id' | 'chain_id' | 'tx_to' | 'tx_hash' | 'tx_hash_2'>,
): FindingDraft | null {
  if (!intent.tx_to || intent.chain_id === null) return null;
  const txTo = intent.tx_to.toLowerCase();
  const storeWallet = merchantWalletOf(stores, intent.store_id, Number(intent.chain_id));
  if (storeWallet === txTo) return null;
  const others = stores
    .filter((s) => s.storeId !== intent.store_id)
    .filter((s) => merchantWalletOf(stores, s.storeId, Number(intent.chain_id)) === txTo)
    .map((s) => s.storeId);
  return {
    kind: 'recipient_not_store_wallet',
    severity: 'warning',
    ref: { type: 'checkout_intent', id: intent.id },
    details: {
      chain_id: Number(intent.chain_id),
      tx_hash: (intent.tx_hash_2 ?? intent.tx_hash)?.toLowerCase() ?? null,
      tx_to: txTo,
      store_wallet: storeWallet ?? null,
      tx_to_stores: others,
      what:
        "tx_to is not the merchant wallet STORES_FILE lists for the intent's store on this chain: " +
        'a payment there proves nothing of this intent (rule 2 books nothing, rule 9 books the transfer)',
    },
  };
}

/** A result that proves nothing (and matched no row), with the findings worth recording. */
function noProof(findings: FindingDraft[] = []): ProofResult {
  return { proven: null, findings, matchedRowId: null, matchedRowIds: [] };
}

async function readIntent(tx: DbExecutor, intentId: string): Promise<IntentRow | undefined> {
  const { rows } = await tx.execute<IntentRow>(
    sql`select ${intentRowColumns} from checkout_intents where id = ${intentId}`,
  );
  return rows[0];
}

/** A confirmed intent and the transaction it names as its payment (hash and recipient lower-case). */
interface ClaimedPayment {
  intentId: string;
  intent: IntentRow;
  chainId: string;
  txHash: string;
  txTo: string;
}

/**
 * The payment a confirmed intent claims: the transfer that credits the merchant wallet (tx_hash_2
 * on the temporary-wallet route, tx_hash when paid directly); null when there is none to prove.
 */
function claimedPayment(intentId: string, intent: IntentRow | undefined): ClaimedPayment | null {
  const hash = intent?.tx_hash_2 ?? intent?.tx_hash;
  if (intent?.status !== 20 || !hash || !intent.tx_to || intent.chain_id === null) return null;
  return {
    intentId,
    intent,
    chainId: intent.chain_id,
    txHash: hash.toLowerCase(),
    txTo: intent.tx_to.toLowerCase(),
  };
}

/**
 * The transaction's final logs, read once (no lock): most calls come from a confirmation whose
 * transfer is not final yet, and end here.
 */
async function finalLogs(tx: DbExecutor, claim: ClaimedPayment): Promise<TransferRow[]> {
  const { rows } = await executePrepared<TransferRow>(
    tx,
    sql`
      select ${transferColumns} from chain_transfers
      where chain_id = ${claim.chainId}::bigint and tx_hash = ${claim.txHash} and state = 'final'
      order by log_index`,
  );
  return rows;
}

/**
 * One decision per intent: once logs of its transaction proved it at N, later calls from either
 * side change nothing (read from the rows alone: the common path pays no allocation read). A
 * proof at another amount (a mismatch) is decided by its allocations (proveRemainder).
 */
function alreadyDecided(logs: TransferRow[], intentId: string): boolean {
  return logs.some(
    (l) =>
      l.matched_ref === intentId &&
      l.matched_as?.includes('payment_proof') === true &&
      !l.matched_as.includes('payment_mismatch'),
  );
}

/**
 * Whether the intent's transaction was allocated already in a way that may leave it owed: a proof
 * of its own at another amount (short: a top-up may complete it), or no free log left while one
 * into the wallet is a proof (another intent's lone log, whose excess this intent may be owed).
 */
function revisitsAllocations(wallet: WalletLogs, intentId: string): boolean {
  const proof = (l: TransferRow) => l.matched_as?.includes('payment') === true;
  return wallet.intoWallet.some(
    (l) =>
      proof(l) &&
      (l.matched_ref === intentId ? l.matched_as?.includes('payment_mismatch') : wallet.free.length === 0),
  );
}

/**
 * The top-up of a named payment short of N (docs/accounting.md, rule 2): when the free logs of
 * the named transaction (the lone log of another amount, or logs no split sums to N) add up to
 * less than N, other free transfers into tx_to in the token, within the intent's window, that
 * complete N exactly are taken with them. Null when it does not apply (N unknown: rule 1 waits;
 * a log held by another matcher; the named logs already pay N or more; nothing completes it).
 */
async function withTopUp(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  expected: ExpectedPayment,
  locked: PayingLogs,
): Promise<TransferRow[] | null> {
  const n = expected.inTransit;
  if (n === null || !expected.token || !locked.noneHeld) return null;
  const sum = (rows: TransferRow[]) => rows.reduce((s, l) => s + BigInt(l.value), 0n);
  if (locked.paying && expected.amounts.includes(sum(locked.paying))) return null;
  const named = locked.paying ?? locked.lockedFree;
  const short = n - sum(named);
  if (named.length === 0 || short <= 0n) return null;
  const topUps = await lockTopUps(tx, topUpQuery(deps, claim, expected.token, short));
  return topUps ? [...named, ...topUps] : null;
}

function topUpQuery(deps: PaymentProofDeps, claim: ClaimedPayment, token: Token, owed: bigint): TopUpQuery {
  return {
    intentId: claim.intentId,
    chainId: claim.chainId,
    txHash: claim.txHash,
    txTo: claim.txTo,
    token: token.address.toLowerCase(),
    owed,
    graceMs: deps.graceMs ?? DEFAULT_TOP_UP_GRACE_MS,
  };
}

/**
 * Rule 2 for an intent whose transaction was allocated before (revisitsAllocations): what it is
 * still owed is N less its live `payment` allocations. It takes first what another intent's lone
 * log holds in excess (one transfer paying several intents: claimSharedExcess), else, when its own
 * proof was short, a top-up that completes N exactly. A proof made before allocations existed
 * (nothing allocated to a proof of its own) is decided as it was.
 */
async function proveRemainder(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  wallet: WalletLogs,
  expected: ExpectedPayment,
): Promise<ProofResult> {
  const n = expected.inTransit;
  if (n === null || !expected.token) return noProof();
  const intent = { type: 'checkout_intent' as const, id: claim.intentId };
  const already = await allocatedTo(tx, intent, ['payment']);
  const mine = wallet.intoWallet.some((l) => l.matched_ref === claim.intentId);
  if (already >= n || (mine && already === 0n)) return noProof();
  const terms = { token: expected.token, inTransit: n };
  const shared = await claimSharedExcess(tx, deps, claim, wallet.intoWallet, n - already, terms);
  if (shared.matchedRowIds.length > 0 || !mine) return shared;
  const topUps = await lockTopUps(tx, topUpQuery(deps, claim, expected.token, n - already));
  if (!topUps) return noProof();
  const proof = await bookProof(tx, deps, claim, topUps, { ...terms, mismatch: false, paid: n - already });
  // The chain now shows N in all: the short proof's finding has no cause any more.
  await resolveFinding(tx, 'payment_amount_mismatch', intent);
  const matchedRowIds = topUps.map((l) => l.id);
  return {
    proven: proof.proven,
    findings: proof.findings,
    matchedRowId: matchedRowIds[0] ?? null,
    matchedRowIds,
  };
}

/**
 * One transfer paying several intents that name its transaction (docs/accounting.md, "Pieces and
 * bundles"): the first intent proven took the log whole, its N to in_transit and the excess to
 * suspense (`payment_excess`). Another intent takes what it is owed of that excess, oldest
 * allocation first: debit suspense, credit in_transit, under a key of its own per (inclusion,
 * intent). The excess allocation is released and what is left of it allocated again; once no
 * excess is left, the first intent's `payment_amount_mismatch` has no cause and resolves. Still
 * short afterwards: a mismatch of its own, the rest left in in_transit.
 */
async function claimSharedExcess(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  intoWallet: TransferRow[],
  owed: bigint,
  terms: { token: Token; inTransit: bigint },
): Promise<ProofResult> {
  const others = intoWallet.filter((l) => l.matched_ref !== null && l.matched_ref !== claim.intentId);
  if (others.length === 0) return noProof();
  const excesses = await liveExcesses(
    tx,
    others.map((l) => l.id),
  );
  const findings: FindingDraft[] = [];
  const taken: TransferRow[] = [];
  let proven: PostedEntry | null = null;
  let left = owed;
  for (const excess of excesses) {
    const row = others.find((l) => l.id === excess.transfer_id);
    if (!row || left === 0n) continue;
    const take = BigInt(excess.amount) < left ? BigInt(excess.amount) : left;
    const entry = await postShare(tx, deps, claim, row, excess, take, terms.token);
    proven ??= entry;
    taken.push(row);
    left -= take;
  }
  if (!proven) return noProof();
  if (left > 0n)
    findings.push(amountMismatch(claim.intent, terms.token, taken, terms.inTransit, terms.inTransit - left));
  const first = taken[0] as TransferRow;
  const ref = { type: 'checkout_intent', id: claim.intentId };
  if (proven.created) {
    const revision = await bookingRevision(tx, ref, 'chain.payment_proven', proven.id);
    const proofTerms = { ...terms, mismatch: left > 0n, paid: owed - left };
    // A share proves what it takes of the log, not the log (the first proof announced that).
    await recordEvent(tx, provenEvent(claim, taken, proofTerms, proven, revision, owed - left));
  }
  await resolveVerificationFindings(tx, ref);
  return { proven, findings, matchedRowId: first.id, matchedRowIds: taken.map((l) => l.id) };
}

/** The live `payment_excess` allocations of these transfers, oldest first. */
async function liveExcesses(tx: DbExecutor, transferIds: string[]): Promise<LiveAllocation[]> {
  const all: LiveAllocation[] = [];
  for (const id of transferIds) all.push(...(await transferAllocations(tx, id, 'in')));
  return all
    .filter((a) => a.purpose === 'payment_excess')
    .sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/** One intent's share of another's excess: its entry, and the allocations moved. */
async function postShare(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  row: TransferRow,
  excess: LiveAllocation,
  take: bigint,
  token: Token,
): Promise<PostedEntry> {
  const storeId = claim.intent.store_id;
  const draft = paymentShareFromExcess({
    storeId,
    intentId: claim.intentId,
    transfer: transferFact(row),
    token,
    amount: take,
    excessOf: excess.obligation_id,
  });
  const posted = await postEntry(tx, draft, { accounts: deps.accounts });
  const reason = `intent ${claim.intentId} is owed ${take} of it`;
  await releaseAllocations(tx, row.id, reason, { side: 'in', purposes: ['payment_excess'] });
  const rest = BigInt(excess.amount) - take;
  const base = { transferId: row.id, side: 'in' as const, rule: 'rule 2' };
  if (rest > 0n) {
    await allocate(tx, {
      ...base,
      obligation: { type: 'checkout_intent', id: excess.obligation_id },
      purpose: 'payment_excess',
      amount: rest,
      entryId: excess.entry_id === null ? null : BigInt(excess.entry_id),
      storeId: excess.store_id,
    });
  } else {
    await resolveFinding(tx, 'payment_amount_mismatch', {
      type: 'checkout_intent',
      id: excess.obligation_id,
    });
  }
  await allocate(tx, {
    ...base,
    obligation: { type: 'checkout_intent', id: claim.intentId },
    purpose: 'payment',
    amount: take,
    entryId: posted.id,
    storeId,
  });
  return posted;
}

/** What would prove the payment. */
interface ExpectedPayment {
  /** N in in_transit as rule 1's live entry booked it; null while rule 1 waits. */
  inTransit: bigint | null;
  token: Token | undefined;
  /** The amounts that would prove it. */
  amounts: bigint[];
}

async function expectedPayment(
  tx: DbExecutor,
  chains: ChainRegistry,
  claim: ClaimedPayment,
): Promise<ExpectedPayment> {
  const { intent } = claim;
  // A rule-1 entry that was reversed (rule 4: confirmed, then failed) holds nothing in in_transit:
  // without a live one the intent is treated as rule 1 waiting, and a proof books its next
  // revision from the chain's value (settleWaitingRule1).
  const inTransit = await inTransitOf(tx, claim.intentId);
  const token = intent.coin_contract
    ? chains.token(Number(intent.chain_id), intent.coin_contract)
    : undefined;
  // The amounts that would prove it: N as rule 1 booked it, or, while rule 1 waits for the chain
  // (reported P - F != N), the reported N and P - F.
  const amounts = inTransit !== null ? [inTransit] : token ? reportedNets(intent, token.decimals) : [];
  return { inTransit, token, amounts };
}

/**
 * Nothing into the wallet to prove it with. A transaction whose one log went elsewhere (another
 * recipient or token) is worth rule 2's findings for a person; nothing is marked, so a log
 * that comes later still proves it.
 */
function misdirectedPaymentFindings(
  chains: ChainRegistry,
  claim: ClaimedPayment,
  logs: TransferRow[],
  wallet: WalletLogs,
  expected: ExpectedPayment,
): FindingDraft[] {
  const only = logs.length === 1 && wallet.intoWallet.length === 0 ? logs[0] : undefined;
  if (!only || expected.inTransit === null || !expected.token) return [];
  const fact = transferFact(only);
  return checkTransfer(chains, claim, fact, { token: expected.token, amount: expected.inTransit }).findings;
}

/**
 * Rule 2's check of one log against the intent's token, recipient and an amount; `inTransit` only
 * when a lone log of another amount is booked at its value (paymentProven).
 */
function checkTransfer(
  chains: ChainRegistry,
  claim: ClaimedPayment,
  fact: ChainTransferFact,
  expected: { token: Token; amount: bigint; inTransit?: bigint },
): RuleOutcome {
  const { intent } = claim;
  return paymentProven({
    storeId: intent.store_id,
    intentId: claim.intentId,
    transfer: fact,
    token: chains.token(fact.chainId, fact.tokenAddress) ?? null,
    expected: { token: expected.token, recipient: intent.tx_to as `0x${string}`, amount: expected.amount },
    ...(expected.inTransit !== undefined ? { inTransit: expected.inTransit } : {}),
  });
}

/**
 * N in in_transit for the proof to clear: rule 1's live entry; or, when rule 1 waited for the
 * chain, the entry booked now from the proven value; null when rule 1 still cannot book.
 */
async function settleWaitingRule1(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  inTransit: bigint | null,
  paid: bigint,
): Promise<{ inTransit: bigint | null; findings: FindingDraft[] }> {
  const { intent } = claim;
  if (inTransit !== null || intent.amount_coins === null || intent.confirmed_at === null) {
    return { inTransit, findings: [] };
  }
  // Rule 1 waited for the chain (reported P - F != N): the proven value settles it.
  const booked = await bookConfirmation(
    tx,
    deps,
    {
      intentId: claim.intentId,
      storeId: intent.store_id,
      chainId: Number(intent.chain_id),
      coinContract: intent.coin_contract,
      coinSymbol: intent.coin_symbol,
      amountCoins: intent.amount_coins,
      actualPaidAmount: intent.actual_paid_amount,
      serviceFeeAmount: intent.service_fee_amount,
      netIncomeAmount: intent.net_income_amount,
      amountCents: intent.amount_cents === null ? null : BigInt(intent.amount_cents),
      currency: intent.currency,
      currencyRate: intent.currency_rate,
      txHash: intent.tx_hash,
      txHash2: intent.tx_hash_2,
      confirmedAt: new Date(intent.confirmed_at),
    },
    paid,
  );
  return { inTransit: await inTransitOf(tx, claim.intentId), findings: [...booked.findings] };
}

/** What the paying logs are booked against. */
interface ProofTerms {
  token: Token;
  /** N in in_transit (rule 1's live entry). */
  inTransit: bigint;
  /** Whether the logs sum to another amount than N. */
  mismatch: boolean;
  /** What the logs sum to. */
  paid: bigint;
}

/** Rule 2 for each paying log; the first entry it posted, and its findings. */
async function bookProof(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  paying: TransferRow[],
  terms: ProofTerms,
): Promise<{ proven: PostedEntry | null; findings: FindingDraft[] }> {
  const findings: FindingDraft[] = [];
  // A lone log of another amount than N still reached the wallet: it is booked at the chain's
  // value (the wallet's account follows the chain), the rest of N stays in in_transit (or, above
  // N, the excess goes to suspense), and a critical finding asks a person to settle the difference.
  if (terms.mismatch) {
    findings.push(amountMismatch(claim.intent, terms.token, paying, terms.inTransit, terms.paid));
  }
  let proven: PostedEntry | null = null;
  const created: { row: TransferRow; entry: PostedEntry }[] = [];
  for (const row of paying) {
    const outcome = await proveWithLog(tx, deps, claim, row, terms);
    findings.push(...outcome.findings);
    proven ??= outcome.posted;
    if (outcome.posted?.created) created.push({ row, entry: outcome.posted });
  }
  // The event goes with the entries, in their transaction: one per booking, however many logs,
  // for what this booking proved (a log proven before, or again after a reorg, is not counted twice).
  const first = created[0];
  if (first) {
    const ref = { type: 'checkout_intent', id: claim.intentId };
    const revision = await bookingRevision(tx, ref, 'chain.payment_proven', first.entry.id);
    await recordEvent(
      tx,
      provenEvent(
        claim,
        created.map((c) => c.row),
        terms,
        first.entry,
        revision,
      ),
    );
  }
  // The payment is on chain: verification's findings about it (not found, reverted, no transfer;
  // a node that lagged at the grace) have cleared.
  if (proven) await resolveVerificationFindings(tx, { type: 'checkout_intent', id: claim.intentId });
  return { proven, findings };
}

/**
 * `payment.proven`: the logs this booking proved the intent with (`amount`: what they add to the
 * wallet; for a share of another intent's log, what it takes of that log's excess in suspense),
 * what all its paying logs sum to and what rule 1 expected.
 */
function provenEvent(
  claim: ClaimedPayment,
  logs: TransferRow[],
  terms: ProofTerms,
  firstEntry: PostedEntry,
  revision: number,
  /** What the booking proved when it is not the logs' sum: a share of a log paying several intents. */
  proved?: bigint,
): EventDraft {
  const facts = logs.map(transferFact);
  const first = facts[0];
  if (!first) throw new Error(`payment.proven of ${claim.intentId} without a log`);
  const fmt = (units: bigint) => formatDecimalAmount(units, terms.token.decimals);
  return {
    id: announcementId('payment.proven', claim.intentId, revision),
    type: 'payment.proven',
    occurredAt: first.occurredAt,
    data: {
      intent_id: claim.intentId,
      store_id: claim.intent.store_id,
      entry_id: firstEntry.id.toString(),
      revision,
      ...tokenData(terms.token),
      tx_hash: first.txHash.toLowerCase(),
      log_indexes: facts.map((f) => f.logIndex),
      block_number: Number(first.blockNumber),
      amount: fmt(proved ?? facts.reduce((sum, f) => sum + f.amount, 0n)),
      paid_amount: fmt(terms.paid),
      expected_amount: fmt(terms.inTransit),
      mismatch: terms.mismatch,
    },
  };
}

/** Rule 2 for one paying log: posts its entry (null when there is none) and marks the row. */
async function proveWithLog(
  tx: DbExecutor,
  deps: PaymentProofDeps,
  claim: ClaimedPayment,
  row: TransferRow,
  terms: ProofTerms,
): Promise<{ posted: PostedEntry | null; findings: FindingDraft[] }> {
  const { intentId } = claim;
  const storeId = claim.intent.store_id;
  const fact = transferFact(row);
  // Rule 2 per log, at its own value (its key names its inclusion, so rule 3 unwinds it alone).
  const outcome = checkTransfer(deps.chains, claim, fact, {
    token: terms.token,
    amount: fact.amount,
    // A lone log above N clears N from in_transit; the excess goes to suspense.
    ...(terms.mismatch ? { inTransit: terms.inTransit } : {}),
  });
  // What rule 9 booked on the row stays named (for rule 3), except the suspense entry a proof
  // reverses below.
  const kinds = (row.matched_as ?? '').split(',').filter((k) => k !== '');
  if (!outcome.entry) {
    // Nothing to book (a log of value 0): the intent is decided, a person looks.
    await markApplied(tx, row.id, ['payment_mismatch'], intentId, storeId, { store: 'replace' });
    return { posted: null, findings: outcome.findings };
  }
  if (kinds.includes('transfer_in_unmatched')) await moveOutOfSuspense(tx, row.id, fact, intentId);
  const posted = await postEntry(tx, outcome.entry, { accounts: deps.accounts });
  if (posted.created) await allocateProof(tx, claim, row, posted, terms);
  const marks = terms.mismatch ? ['payment_proof', 'payment_mismatch'] : ['payment_proof'];
  // The inflow's decision only: the sender's side, when it is a wallet of ours, stays its own.
  await markApplied(tx, row.id, marks, intentId, storeId, {
    remove: ['transfer_in_unmatched'],
    store: 'replace',
  });
  return { posted, findings: outcome.findings };
}

/**
 * What a rule-2 entry of one log explains: its value to the intent's payment, but for a lone log
 * above N the part above it, which went to suspense (`payment_excess`: another intent naming the
 * transaction may be owed it). One insert on the common path.
 */
async function allocateProof(
  tx: DbExecutor,
  claim: ClaimedPayment,
  row: TransferRow,
  posted: PostedEntry,
  terms: ProofTerms,
): Promise<void> {
  const value = BigInt(row.value);
  const excess = terms.mismatch && value > terms.inTransit ? value - terms.inTransit : 0n;
  const base = {
    transferId: row.id,
    side: 'in' as const,
    obligation: { type: 'checkout_intent' as const, id: claim.intentId },
    rule: 'rule 2',
    entryId: posted.id,
    storeId: claim.intent.store_id,
  };
  await allocate(tx, { ...base, purpose: 'payment', amount: value - excess });
  await allocate(tx, { ...base, purpose: 'payment_excess', amount: excess });
}

/**
 * Reverses rule 9's suspense entry of a log that proves the intent, and resolves its finding. A
 * person's classification of that suspense (rule 10) is reversed first: the money is the sale's.
 */
async function moveOutOfSuspense(
  tx: DbExecutor,
  rowId: string,
  fact: ChainTransferFact,
  intentId: string,
): Promise<void> {
  const key = unmatchedTransferKey(fact, 'in');
  const booked = await tx.execute<{ id: string }>(
    sql`select id::text from ledger_entries where idempotency_key = ${key}`,
  );
  if (booked.rows[0]) {
    const reason = `transfer matched intent ${intentId}`;
    await supersedeClassification(tx, BigInt(booked.rows[0].id), `rule 2: ${reason}`);
    await reverseEntry(tx, BigInt(booked.rows[0].id), reason);
    // Whatever rule 9 allocated of it to suspense is the sale's now.
    await releaseAllocations(tx, rowId, reason, { side: 'in', purposes: ['unmatched'] });
  }
  await resolveFinding(tx, 'unmatched_transfer_in', {
    type: 'chain_transfer',
    id: chainTransferId(fact),
  });
}

/** Rule 2 booked a log of another amount than N: a critical finding, for a person to settle. */
function amountMismatch(
  intent: IntentRow,
  token: Token,
  paying: TransferRow[],
  expected: bigint,
  actual: bigint,
): FindingDraft {
  const fmt = (u: bigint) => formatDecimalAmount(u, token.decimals);
  const [first] = paying;
  const over = actual > expected;
  return {
    kind: 'payment_amount_mismatch',
    severity: 'critical',
    ref: { type: 'checkout_intent', id: intent.id },
    details: {
      ...(first && paying.length === 1 ? chainTransferDetails(transferFact(first)) : {}),
      token: token.symbol,
      expected_amount: fmt(expected),
      actual_amount: fmt(actual),
      ...(over
        ? {
            to_suspense: fmt(actual - expected),
            what: 'the payment was booked at the value the chain shows; N cleared in_transit and the excess is in suspense',
          }
        : {
            left_in_transit: fmt(expected - actual),
            what: 'the payment was booked at the value the chain shows; the rest of N stays in in_transit',
          }),
    },
  };
}

/** Verification's findings of a payment not (yet) seen on chain (src/payments/verifyPayments.ts). */
export const VERIFICATION_FINDINGS = [
  'payment_tx_not_found',
  'payment_tx_reverted',
  'payment_transfer_missing',
];

/** Resolves the open verification findings of an intent whose payment is proven (one statement). */
async function resolveVerificationFindings(tx: DbExecutor, ref: FindingDraft['ref']): Promise<void> {
  await executePrepared(
    tx,
    sql`
    update findings set resolved_at = now()
    where kind = any(${sql.param(VERIFICATION_FINDINGS)}::text[]) and ref_type = ${ref.type} and ref_id = ${ref.id}
      and resolved_at is null`,
  );
}

/** N as reported (net_income_amount) and P - F, in base units: what a proof may be while rule 1 waits. */
function reportedNets(intent: IntentRow, decimals: number): bigint[] {
  const parse = (text: string | null) => {
    if (text === null) return null;
    try {
      return parseDecimalAmount(text, decimals);
    } catch {
      return null;
    }
  };
  const n = parse(intent.net_income_amount);
  const p = parse(intent.actual_paid_amount);
  const f = parse(intent.service_fee_amount);
  return [n, p !== null && f !== null ? p - f : null].filter((v): v is bigint => v !== null && v >= 0n);
}

/**
 * N as rule 1 booked it: the in_transit debit of the intent's live rule-1 entry, the latest one
 * that has no reversal (rule 4), under `checkout:confirmed:<id>` or a revision of that key
 * (`...:r<n>`, booked again after a reversal); null when no rule-1 entry is live.
 */
export async function inTransitOf(tx: DbExecutor, intentId: string): Promise<bigint | null> {
  const key = checkoutConfirmedKey(intentId);
  const { rows } = await executePrepared<{ amount: string }>(
    tx,
    sql`
    select p.amount::text from ledger_entries e
    join ledger_postings p on p.entry_id = e.id
    join ledger_accounts a on a.id = p.account_id
    where e.ref_type = 'checkout_intent' and e.ref_id = ${intentId}
      and (e.idempotency_key = ${key} or starts_with(e.idempotency_key, ${`${key}:`}))
      and a.code like 'assets:in_transit:%'
      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id)
    order by e.id desc
    limit 1`,
  );
  return rows[0] ? BigInt(rows[0].amount) : null;
}

/**
 * A confirmation of a payment routed through a temporary wallet (the service kept a fee: paid
 * directly, the merchant wallet receives it all and there is none) read before the service
 * reported the sweep into the merchant wallet (tx_hash_2): what proves it on chain is not known
 * yet, so the intent is polled on until a read names it.
 */
export function awaitsSweepHash(intent: Pick<IntentRow, 'tx_hash_2' | 'service_fee_amount'>): boolean {
  if (intent.tx_hash_2 || intent.service_fee_amount === null) return false;
  return !sameDecimalAmount(intent.service_fee_amount, '0');
}
