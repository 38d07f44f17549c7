import { randomBytes } from 'node:crypto';
import { DrizzleQueryError, sql } from 'drizzle-orm';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DomainContext } from '../context/domainContext.ts';
import type { DbExecutor } from '../db/database.ts';
import { recordFinding } from '../findings/recordFinding.ts';
import type { Token } from '../ledger/accounts.ts';
import { postEntry } from '../ledger/postEntry.ts';
import { claimLinkFunded } from '../ledger/rules/claimLinkRules.ts';
import { addSecretValue, type Logger } from '../logging/logger.ts';
import { AmountFormatError, formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import type { CreateClaimLinkInput } from '../svc/client.ts';
import { SvcInvalidRequestError } from '../svc/errors.ts';
import { type CreateClaimLinkResult, createClaimLinkRequestSchema } from '../svc/models/claimLink.ts';
import { eip155ToServiceChain, UnknownChainError } from '../svc/models/serviceChain.ts';
import { StableCoin, type StableCoinSymbol } from '../svc/models/stableCoin.ts';
import { decideRetry, defaultRetrySettings, mayHaveActed, type RetrySettings } from '../svc/retryPolicy.ts';
import { markCancelled } from './closeLink.ts';
import { describeError } from './describeError.ts';
import { PayoutConflictError, PayoutCreateError, PayoutInputError } from './errors.ts';
import { findPayout, linkFactOf, type PayoutRecord, type PayoutView, viewOf } from './payoutRecord.ts';
import { seal } from './secretBox.ts';

/**
 * Claim-link create, idempotent by reference_id (docs/accounting.md, "Payments, payouts and the chain"; issue 6).
 *
 * Glossary
 * - payout: our record of one claim-link auto-payout, a row of `payouts` keyed by (store, reference_id);
 * - attempt: one create call; every attempt of a payout sends the same reference_id, so the service
 *   funds the link at most once however often we ask;
 * - idempotent hit: the service matched an earlier call with this reference_id and answered with
 *   the original link (no token, no funding hash: they were returned to the first call only).
 *
 * The row is written before the first call (create_outcome pending) and every attempt is counted
 * on it, so a crash or a timeout is resumed by running the same create again. The funded link and
 * its rule-5 entry commit in one transaction, tried again a few times from the answer in memory;
 * once any attempt may have reached the service, every way this function fails is a
 * PayoutCreateError `unknown` (the CLI's exit 75), never a plain error that reads as "nothing paid".
 */

/**
 * Attempts and backoff of create with the same reference_id (defaults below), and waits and jitter
 * injected in tests. createPayout owns the retries of claim-link create (same reference_id,
 * recorded per attempt): give it clients that do not retry create themselves
 * (`retry: { maxAttempts: 1 }`), or the two loops multiply (still bounded).
 */
export interface CreatePayoutTuning {
  createRetry?: Partial<RetrySettings>;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

export interface CreatePayoutInput {
  storeId: string;
  /** Token units, a decimal string such as "5.25"; no finer than the token's decimals on the chain. */
  amount: string;
  coin: StableCoinSymbol | string;
  /** EIP-155 chain id, or a chain name of the registry such as "base". */
  chain: number | string;
  referenceId: string;
  receiverEmail?: string | null | undefined;
  senderName?: string | null | undefined;
  senderMessage?: string | null | undefined;
}

export interface CreatePayoutResult {
  payout: PayoutView;
  /** False when the payout was already created: nothing was sent. */
  called: boolean;
  /** The service matched an earlier call with the same reference_id. */
  idempotentHit: boolean;
}

/** A request checked against everything we know before anything is recorded or sent. */
export interface ValidPayoutRequest {
  storeId: string;
  referenceId: string;
  /** Canonical decimal string (no trailing zeros). */
  amount: string;
  coin: StableCoinSymbol;
  chainId: number;
  token: Token;
  receiverEmail: string | null;
  senderName: string | null;
  senderMessage: string | null;
  api: CreateClaimLinkInput;
}

export async function createPayout(
  deps: DomainContext & CreatePayoutTuning,
  input: CreatePayoutInput,
): Promise<CreatePayoutResult> {
  const request = validatePayoutRequest(deps.chains, input);
  // Throws for a store that is not configured, before anything is recorded.
  const client = deps.client(request.storeId);

  const payout = await recordPayout(deps, request);
  if (payout.createOutcome === 'created') {
    return { payout: viewOf(payout), called: false, idempotentHit: payout.idempotentHit };
  }

  const settings: RetrySettings = { ...defaultRetrySettings, ...deps.createRetry };
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = deps.random ?? Math.random;
  const log = deps.logger.child({
    payoutId: payout.id,
    storeId: request.storeId,
    referenceId: request.referenceId,
  });
  // An earlier run that ended unknown, or stopped mid-call (pending with attempts counted), may
  // have funded the link: what this run hears cannot prove that nothing was paid.
  let reachedService =
    payout.createOutcome === 'unknown' || (payout.createOutcome === 'pending' && payout.attempts > 0);
  // The row's count after this run's latest attempt, and how many of them are this run's: a total
  // beyond the row's first count plus our own is another run's attempt, read after our snapshot,
  // whose call may fund the link while ours is refused.
  let attempts = payout.attempts;
  let own = 0;
  const fail = (outcome: 'failed' | 'unknown', reason: string, err: unknown) =>
    new PayoutCreateError(outcome, payout.id, request.referenceId, attempts, reason, { cause: err });
  for (let attempt = 1; ; attempt++) {
    try {
      attempts = await countAttempt(deps, payout.id);
      own += 1;
    } catch (err) {
      // Nothing of this attempt was sent; an earlier one (of this run or another) may have funded it.
      if (!reachedService) throw err;
      const reason = `the attempt could not be recorded: ${describeError(causeOf(err))}`;
      await recordError(deps, log, payout.id, reason, 'unknown');
      log.error({ attempts, reason }, 'claim-link create stopped after an attempt that may have funded it');
      throw fail('unknown', reason, err);
    }
    let result: CreateClaimLinkResult;
    try {
      result = await client.createClaimLinkAutoPayout(request.api);
      // Bearer secrets from here on: no log line may carry them, whatever logs it.
      addSecretValue(result.token);
      addSecretValue(result.claim_url);
    } catch (err) {
      const reason = describeError(err);
      const acted = !(err instanceof SvcInvalidRequestError) && mayHaveActed(err);
      reachedService ||= acted;
      const decision = decideRetry(err, 'safe', attempt, settings, random);
      if (decision.retry) {
        await recordError(deps, log, payout.id, reason, null);
        log.warn(
          { attempt: attempts, delayMs: decision.delayMs, reason },
          'claim-link create: retrying with the same reference_id',
        );
        await sleep(decision.delayMs);
        continue;
      }
      // A refusal proves only that this attempt paid nothing: once any attempt may have reached
      // the service (a timeout that funded the link, then 50103 insufficient balance because it
      // did), `failed` would hide a funded link whose funding the chain side then books to rule 9
      // and a later run books again through its idempotent hit. Unknown sends the caller back to
      // run the same create, which resumes safely. Another run's attempt counts too.
      if (attempts !== payout.attempts + own) reachedService = true;
      const decided = reachedService ? 'unknown' : 'failed';
      const recorded = await recordError(deps, log, payout.id, reason, decided, payout.attempts + own);
      // The row has the last word: another run may have counted an attempt since ours (unknown)
      // or created the payout (running the same create again returns it).
      const outcome = (recorded ?? decided) === 'failed' ? 'failed' : 'unknown';
      log.warn({ attempts, outcome, reason }, 'claim-link create did not fund a link');
      throw fail(outcome, reason, err);
    }
    let created: PayoutView;
    try {
      created = await settleWithRetries(deps, log, sleep, payout.id, result);
    } catch (err) {
      // The service funded the link and we could not record it: a plain error would read as
      // "refused, nothing paid" and invite a new reference_id, a second payment. What the answer
      // alone carries (funding hash, token) is kept if the row can still be written.
      const reason = `the funded link could not be recorded: ${describeError(causeOf(err))}`;
      await recordUnsettled(deps, log, payout.id, reason, result);
      log.error(
        { attempts, claimLinkId: result.claim_link_id, reason },
        'claim-link create: the service funded the link but it could not be recorded; run the same create again',
      );
      throw fail('unknown', reason, err);
    }
    log.info(
      { claimLinkId: created.claimLinkId, attempts, idempotentHit: result.idempotent_hit },
      'claim link created and funded',
    );
    return { payout: created, called: true, idempotentHit: result.idempotent_hit };
  }
}

/** Checks a create request against the chain registry, the service's Chain enum and the spec's limits. */
export function validatePayoutRequest(chains: ChainRegistry, input: CreatePayoutInput): ValidPayoutRequest {
  const coin = input.coin.toUpperCase();
  if (coin !== 'USDT' && coin !== 'USDC')
    throw new PayoutInputError(`coin ${input.coin} is not USDT or USDC`);
  const chainId = resolveChain(chains, input.chain);
  let serviceChain: number;
  try {
    serviceChain = eip155ToServiceChain(chainId);
  } catch (err) {
    if (err instanceof UnknownChainError) throw new PayoutInputError(`claim links: ${err.message}`);
    throw err;
  }
  const token = chains.tokenBySymbol(chainId, coin);
  if (!token) {
    throw new PayoutInputError(`chain ${chainId} has no ${coin} in the chain registry (see CHAINS_FILE)`);
  }
  let units: bigint;
  try {
    units = parseDecimalAmount(input.amount, token.decimals);
  } catch (err) {
    if (err instanceof AmountFormatError) {
      throw new PayoutInputError(`${err.message} (${coin} on chain ${chainId}); it is never rounded`);
    }
    throw err;
  }
  if (units <= 0n) throw new PayoutInputError(`amount ${input.amount} must be greater than 0`);
  const amount = formatDecimalAmount(units, token.decimals);
  const api = {
    amount,
    stable_coin: StableCoin[coin],
    chain: serviceChain,
    receiver_email: input.receiverEmail ?? null,
    sender_display_name: input.senderName ?? null,
    sender_message: input.senderMessage ?? null,
    reference_id: input.referenceId,
  };
  const parsed = createClaimLinkRequestSchema.safeParse(api);
  if (!parsed.success) {
    throw new PayoutInputError(
      parsed.error.issues
        .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
        .join('; '),
    );
  }
  return {
    storeId: input.storeId,
    referenceId: input.referenceId,
    amount,
    coin,
    chainId,
    token,
    receiverEmail: api.receiver_email,
    senderName: api.sender_display_name,
    senderMessage: api.sender_message,
    api: parsed.data,
  };
}

/** An EIP-155 id ("8453", 8453) or a registry chain name ("base", "Sepolia"). */
export function resolveChain(chains: ChainRegistry, chain: number | string): number {
  const text = String(chain).trim();
  const known = () =>
    chains
      .chains()
      .map((c) => `${c.chainId} ${c.name.toLowerCase()}`)
      .join(', ');
  if (/^\d+$/.test(text)) {
    const id = Number(text);
    if (!chains.chain(id))
      throw new PayoutInputError(`chain ${text} is not in the chain registry (known: ${known()})`);
    return id;
  }
  const found = chains.chains().find((c) => c.name.toLowerCase() === text.toLowerCase());
  if (!found) throw new PayoutInputError(`chain ${text} is not in the chain registry (known: ${known()})`);
  return found.chainId;
}

/**
 * Inserts the payout (pending) or finds the one already recorded under (store, reference_id),
 * which must have the same parameters.
 */
async function recordPayout(deps: DomainContext, request: ValidPayoutRequest): Promise<PayoutRecord> {
  const id = `po_${randomBytes(12).toString('hex')}`;
  // Dated by the injected clock, not the database's: funding matched by amount compares these
  // with block times (src/settlement/claimLinkFunding.ts), and every time rule reads one clock.
  const now = deps.clock.now().toISOString();
  await deps.db.execute(sql`
    insert into payouts (id, store_id, reference_id, amount, coin, chain_id, token_address,
                         receiver_email, sender_name, sender_message, create_outcome, created_at, updated_at)
    values (${id}, ${request.storeId}, ${request.referenceId}, ${request.amount}, ${StableCoin[request.coin]},
            ${request.chainId}, ${request.token.address}, ${request.receiverEmail}, ${request.senderName},
            ${request.senderMessage}, 'pending', ${now}::timestamptz, ${now}::timestamptz)
    on conflict (store_id, reference_id) do nothing`);
  const payout = await findPayout(deps.db, { storeId: request.storeId, referenceId: request.referenceId });
  if (!payout)
    throw new Error(`payout ${request.storeId}/${request.referenceId} was neither inserted nor found`);
  if (payout.id !== id) {
    const conflicts = [
      { field: 'amount', recorded: payout.amount, given: request.amount },
      { field: 'coin', recorded: payout.coin, given: request.coin },
      { field: 'chain', recorded: String(payout.chainId), given: String(request.chainId) },
      { field: 'receiver_email', recorded: payout.receiverEmail, given: request.receiverEmail },
      { field: 'sender_name', recorded: payout.senderName, given: request.senderName },
      { field: 'sender_message', recorded: payout.senderMessage, given: request.senderMessage },
    ].filter((c) => c.recorded !== c.given);
    if (conflicts.length > 0) throw new PayoutConflictError(payout.id, request.referenceId, conflicts);
  }
  return payout;
}

/**
 * Counts an attempt before it is sent. A `failed` row becomes `pending` again: while the new call
 * is in flight (and if the process dies during it) the row must not say "nothing was paid", or
 * the chain side would book its funding as an owner withdrawal and a refusal after a crash would
 * write `failed` over a funded link.
 */
async function countAttempt(deps: DomainContext, payoutId: string): Promise<number> {
  const { rows } = await deps.db.execute<{ attempts: number }>(sql`
    update payouts set attempts = attempts + 1, updated_at = ${deps.clock.now().toISOString()}::timestamptz,
      create_outcome = case when create_outcome = 'failed' then 'pending' else create_outcome end
    where id = ${payoutId} returning attempts`);
  return rows[0]?.attempts ?? 0;
}

/**
 * Records a failed attempt's error and, at the end of a run, its outcome; never downgrades a
 * created payout, and writes `failed` only while the row counts exactly `expectedAttempts` (the
 * first count plus this run's own), else `unknown`. Best effort (when the database cannot be
 * written, the outcome the caller decided stands): returns the row's create_outcome after it.
 */
async function recordError(
  deps: DomainContext,
  log: Logger,
  payoutId: string,
  reason: string,
  outcome: 'failed' | 'unknown' | null,
  expectedAttempts = 0,
): Promise<PayoutView['createOutcome'] | undefined> {
  try {
    const { rows } = await deps.db.execute<{ create_outcome: PayoutView['createOutcome'] }>(sql`
      update payouts set last_error = ${reason}, updated_at = ${deps.clock.now().toISOString()}::timestamptz,
             create_outcome = case when create_outcome = 'created' then create_outcome
                                   when ${outcome}::text = 'failed' and attempts <> ${expectedAttempts} then 'unknown'
                                   else coalesce(${outcome}::text, create_outcome) end
      where id = ${payoutId} returning create_outcome`);
    return rows[0]?.create_outcome;
  } catch (err) {
    log.error(
      { reason, outcome, error: describeError(causeOf(err)) },
      'claim-link create: could not record the error',
    );
    return undefined;
  }
}

/**
 * After a funded answer whose settling failed: the payout becomes `unknown` (running the same
 * create again settles it through an idempotent hit), keeping what only this answer carries, the
 * funding hash and amount and the sealed token and URL, for that run to merge. The claim link id
 * is not stored: a row without it is not a created link anywhere. Best effort.
 */
async function recordUnsettled(
  deps: DomainContext,
  log: Logger,
  payoutId: string,
  reason: string,
  result: CreateClaimLinkResult,
): Promise<void> {
  try {
    const sealed = sealResult(deps, result);
    await deps.db.execute(sql`
      update payouts set last_error = ${reason}, create_outcome = 'unknown', updated_at = ${deps.clock.now().toISOString()}::timestamptz,
             funding_tx_hash = coalesce(funding_tx_hash, ${result.funding_tx_hash}),
             funded_amount = coalesce(funded_amount, ${result.funded_amount}),
             claim_token_enc = coalesce(claim_token_enc, ${sealed.tokenEnc}),
             claim_url_enc = coalesce(claim_url_enc, ${sealed.urlEnc})
      where id = ${payoutId} and create_outcome <> 'created'`);
  } catch (err) {
    log.error(
      { reason, error: describeError(causeOf(err)) },
      'claim-link create: could not record the unknown outcome',
    );
  }
}

function sealResult(
  deps: DomainContext,
  result: CreateClaimLinkResult,
): { urlEnc: string | null; tokenEnc: string | null } {
  return {
    urlEnc: result.claim_url ? seal(deps.encryptionKey, result.claim_url) : null,
    tokenEnc: result.token ? seal(deps.encryptionKey, result.token) : null,
  };
}

/** Waits between tries of settling a funded answer (held in memory): a restart, a lost connection. */
const SETTLE_RETRY_DELAYS_MS = [250, 1000, 4000];

async function settleWithRetries(
  deps: DomainContext,
  log: Logger,
  sleep: (ms: number) => Promise<void>,
  payoutId: string,
  result: CreateClaimLinkResult,
): Promise<PayoutView> {
  for (let retry = 0; ; retry++) {
    try {
      return await settleCreated(deps, payoutId, result);
    } catch (err) {
      const delayMs = SETTLE_RETRY_DELAYS_MS[retry];
      if (delayMs === undefined || !mayPassOnRetry(err)) throw err;
      log.warn(
        { delayMs, reason: describeError(causeOf(err)) },
        'claim-link create: recording the funded link failed; trying again',
      );
      await sleep(delayMs);
    }
  }
}

/**
 * False for a failure that the same transaction meets again: an error that says so (an
 * idempotency conflict), or SQLSTATE class 22 (data exception) or 23 (integrity violation).
 */
function mayPassOnRetry(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if ('retryable' in e && e.retryable === false) return false;
    if ('code' in e && typeof e.code === 'string' && /^2[23]/.test(e.code)) return false;
  }
  return true;
}

/** The database's own error behind drizzle's wrapper (whose message is the query and its parameters). */
function causeOf(err: unknown): unknown {
  return err instanceof DrizzleQueryError && err.cause !== undefined ? err.cause : err;
}

/**
 * The service funded the link: store it (URL and token sealed) and post rule 5, in one
 * transaction. A payout another run already settled (its answer may have been a replay, without
 * hash or token) takes what this answer adds. A replay that says the link is cancelled closes it
 * (rule 7) in the same transaction; one that says it is claimed or expired is a finding.
 */
async function settleCreated(
  deps: DomainContext,
  payoutId: string,
  result: CreateClaimLinkResult,
): Promise<PayoutView> {
  return deps.db.transaction(async (tx) => {
    const payout = await findPayout(tx, { id: payoutId }, { forUpdate: true });
    if (!payout) throw new Error(`payout ${payoutId} vanished`);
    const sealed = sealResult(deps, result);
    if (payout.createOutcome === 'created') {
      if (payout.claimLinkId !== result.claim_link_id) {
        await recordFinding(
          tx,
          {
            kind: 'claim_link_create_mismatch',
            severity: 'warning',
            ref: { type: 'claim_link', id: result.claim_link_id },
            details: {
              payout_id: payoutId,
              reference_id: payout.referenceId,
              differences: [`claim_link_id ${result.claim_link_id}, recorded ${payout.claimLinkId}`],
            },
          },
          payout.storeId,
        );
        return viewOf(payout);
      }
      await tx.execute(sql`
        update payouts set
          funding_tx_hash = coalesce(funding_tx_hash, ${result.funding_tx_hash}),
          funded_amount = coalesce(funded_amount, ${result.funded_amount}),
          claim_token_enc = coalesce(claim_token_enc, ${sealed.tokenEnc}),
          claim_url_enc = coalesce(claim_url_enc, ${sealed.urlEnc}),
          updated_at = ${deps.clock.now().toISOString()}::timestamptz
        where id = ${payoutId}`);
      const merged = await findPayout(tx, { id: payoutId });
      if (!merged) throw new Error(`payout ${payoutId} vanished`);
      return viewOf(merged);
    }
    const fundedAt = deps.clock.now();
    // The token comes once, to the call that funded the link; a replay's null keeps what we hold.
    await tx.execute(sql`
      update payouts set
        claim_link_id = ${result.claim_link_id},
        link_status = ${result.status},
        claimed_reported_at = case when ${result.status}::text = 'claimed'
                                   then coalesce(claimed_reported_at, ${fundedAt.toISOString()}::timestamptz)
                                   else claimed_reported_at end,
        funding_tx_hash = coalesce(${result.funding_tx_hash}, funding_tx_hash),
        funded_amount = coalesce(${result.funded_amount}, funded_amount),
        funded_at = ${fundedAt.toISOString()}::timestamptz,
        claim_url_enc = coalesce(${sealed.urlEnc}, claim_url_enc),
        claim_token_enc = coalesce(${sealed.tokenEnc}, claim_token_enc),
        idempotent_hit = ${result.idempotent_hit},
        create_outcome = 'created',
        last_error = null,
        updated_at = ${deps.clock.now().toISOString()}::timestamptz
      where id = ${payoutId}`);
    const created = await findPayout(tx, { id: payoutId });
    if (!created) throw new Error(`payout ${payoutId} vanished`);
    const fact = linkFactOf(deps, created);
    const mismatch = resultMismatch(created, fact.token, result);
    if (mismatch.length > 0) {
      await recordFinding(
        tx,
        {
          kind: 'claim_link_create_mismatch',
          severity: 'warning',
          ref: { type: 'claim_link', id: result.claim_link_id },
          details: { payout_id: payoutId, reference_id: created.referenceId, differences: mismatch },
        },
        created.storeId,
      );
    }
    const outcome = claimLinkFunded({
      ...fact,
      occurredAt: fundedAt,
      referenceId: created.referenceId,
      fundingTxHash: created.fundingTxHash,
    });
    if (outcome.entry) await postEntry(tx, outcome.entry, { accounts: deps.accounts });
    for (const finding of outcome.findings) await recordFinding(tx, finding, created.storeId);
    return closedOnReplay(tx, deps, created, result.status);
  });
}

/** Link statuses after which the link holds no money for its recipient (spec, claim link status). */
const CLOSED_ON_REPLAY = new Set(['claiming', 'claimed', 'expired']);

/**
 * A late idempotent hit (after a lost answer) reports the link's status now. Cancelled at the
 * service meanwhile: rule 7 at once, as the cancelled webhook would (nothing else would close it:
 * the expiry job skips cancelled links, refundsOverdue needs cancelled_at). Claimed or expired:
 * funded_at is when we learnt of the funding, not when it happened, so a person checks that the
 * chain side books the claim or the refund.
 */
async function closedOnReplay(
  tx: DbExecutor,
  deps: DomainContext,
  created: PayoutRecord,
  status: string,
): Promise<PayoutView> {
  const claimLinkId = created.claimLinkId ?? '';
  if (status === 'cancelled') {
    const closed = await markCancelled(tx, deps, created.id, 'create');
    if (closed.newlyCancelled) {
      await recordFinding(
        tx,
        {
          kind: 'cancelled_outside_stablebooks',
          severity: 'info',
          ref: { type: 'claim_link', id: claimLinkId },
          details: { what: 'create was answered by a replay of a link already cancelled at the service' },
        },
        created.storeId,
      );
    }
    return closed.payout;
  }
  if (CLOSED_ON_REPLAY.has(status)) {
    await recordFinding(
      tx,
      {
        kind: 'claim_link_closed_on_replay',
        severity: 'warning',
        ref: { type: 'claim_link', id: claimLinkId },
        details: {
          payout_id: created.id,
          reference_id: created.referenceId,
          status,
          what: `create was answered by a replay of a link already ${status} at the service; funded_at is when we learnt of the funding: check that its claim or refund is booked`,
        },
      },
      created.storeId,
    );
  }
  return viewOf(created);
}

/** Where the service's answer differs from what we asked (the entry books what we asked). */
function resultMismatch(payout: PayoutView, token: Token, result: CreateClaimLinkResult): string[] {
  const out: string[] = [];
  let units: bigint | undefined;
  try {
    units = parseDecimalAmount(result.amount, token.decimals);
  } catch {
    units = undefined;
  }
  if (units === undefined || formatDecimalAmount(units, token.decimals) !== payout.amount)
    out.push(`amount ${result.amount}, asked ${payout.amount}`);
  if (result.chain_id !== payout.chainId) out.push(`chain_id ${result.chain_id}, asked ${payout.chainId}`);
  if (result.token_symbol.toUpperCase() !== payout.coin)
    out.push(`token_symbol ${result.token_symbol}, asked ${payout.coin}`);
  if (result.reference_id !== null && result.reference_id !== payout.referenceId)
    out.push(`reference_id ${result.reference_id}, asked ${payout.referenceId}`);
  return out;
}
