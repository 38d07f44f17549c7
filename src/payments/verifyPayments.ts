import { sql } from 'drizzle-orm';
import { receiptTransfers, storeReceiptTransfers } from '../chain/receiptTransfers.ts';
import type { ChainRpc } from '../chain/rpcClients.ts';
import type { Clock } from '../clock.ts';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { StoreWallets } from '../config/stores.ts';
import type { Db } from '../db/database.ts';
import type { FindingDraft } from '../findings/finding.ts';
import { recordFinding, resolveFinding } from '../findings/recordFinding.ts';
import type { ChainTransferFact } from '../ledger/rules/chainTransferFact.ts';
import { paymentProven } from '../ledger/rules/chainTransferRules.ts';
import { inTransitOf, notStoreWalletFinding, proveIntentPayment } from './proveIntentPayment.ts';

/**
 * Single-transaction verification (docs/accounting.md, "Payments, payouts and the chain") for confirmed intents whose paying hash
 * the indexer has not reached within a grace: read the receipt and its logs. A hash that does not
 * exist or reverted, or whose logs pay another token, recipient or amount, is a finding and the
 * money stays in in_transit. A good receipt's transfers are stored (source `receipt`) and proven
 * at finality like the indexer's, after the receipt is read again there. In steady state the
 * indexer proves payments first, so this costs no RPC call. The findings of a hash not found or
 * reverted, or of no transfer, resolve when a later read finds what was missing, and all of them
 * when the payment is proven (proveIntentPayment): e.g. a node that lagged at the grace.
 */
export interface VerifyDeps {
  db: Db;
  chains: ChainRegistry;
  /** Each store's wallets from STORES_FILE: a payment proves an intent only into its store's merchant wallet. */
  stores: readonly StoreWallets[];
  rpcs: Map<number, ChainRpc>;
  clock: Clock;
  /** How long after confirmation the indexer has to prove a payment before its receipt is read. */
  graceMs: number;
}

type Candidate = {
  id: string;
  store_id: string;
  chain_id: string;
  hash: string;
  tx_to: string | null;
  coin_contract: string | null;
};

/** Failed verifications are tried again after this long (a hash may appear late on a lagging node). */
const RETRY_AFTER = '10 minutes';

export async function verifyPayments(deps: VerifyDeps, options: { limit?: number } = {}): Promise<number> {
  const chainIds = [...deps.rpcs.keys()];
  if (chainIds.length === 0) return 0;
  const before = new Date(deps.clock.now().getTime() - deps.graceMs).toISOString();
  const { rows } = await deps.db.execute<Candidate>(sql`
    select i.id, i.store_id, i.chain_id::text, lower(coalesce(i.tx_hash_2, i.tx_hash)) as hash, i.tx_to, i.coin_contract
    from checkout_intents i
    where i.status = 20 and i.confirmed_at < ${before}::timestamptz
      and coalesce(i.tx_hash_2, i.tx_hash) is not null
      -- Routed (the service kept a fee) but its sweep not reported yet: tx_hash is the buyer's
      -- deposit into the temporary wallet, which proves nothing about the merchant wallet.
      and not coalesce(i.tx_hash_2 is null and i.service_fee_amount::numeric > 0, false)
      and i.chain_id in (${sql.join(
        chainIds.map((c) => sql`${c}`),
        sql`, `,
      )})
      and not exists (select 1 from chain_transfers t where t.chain_id = i.chain_id
                      and t.tx_hash = lower(coalesce(i.tx_hash_2, i.tx_hash)) and t.state <> 'orphaned')
      and not exists (select 1 from findings f where f.ref_type = 'checkout_intent' and f.ref_id = i.id
                      and f.resolved_at is null and f.last_seen_at > now() - ${RETRY_AFTER}::interval
                      and f.kind in ('payment_tx_not_found', 'payment_tx_reverted', 'payment_transfer_missing'))
    order by i.confirmed_at limit ${options.limit ?? 100}`);
  for (const intent of rows) await verifyOne(deps, intent);
  return rows.length + (await proveHeldPayments(deps, before, options.limit ?? 100));
}

/**
 * Confirmed intents whose paying transfer is stored, final and in suspense (rule 9) while no live
 * proof books it. A confirmation's proof skips a transfer another matcher holds (lockPayingLogs:
 * the holder proves the intent once the confirmation commits), but a chain job that read the
 * intents before that commit decides the transfer without it, and both commit. Proving the
 * intent now moves the money out of suspense (rule 2), as the proof would have. Past the grace
 * only: in steady state the matcher proves first, and this reads one indexed query.
 */
async function proveHeldPayments(deps: VerifyDeps, before: string, limit: number): Promise<number> {
  const { rows } = await deps.db.execute<{ id: string }>(sql`
    select i.id from checkout_intents i
    where i.status = 20 and i.confirmed_at < ${before}::timestamptz
      and exists (select 1 from chain_transfers t where t.chain_id = i.chain_id
                  and t.tx_hash = lower(coalesce(i.tx_hash_2, i.tx_hash)) and t.state = 'final'
                  and t.matched_as like '%transfer_in_unmatched%')
      and not exists (select 1 from ledger_entries e where e.ref_type = 'checkout_intent' and e.ref_id = i.id
                      and e.kind = 'chain.payment_proven'
                      and not exists (select 1 from ledger_entries r where r.reverses_entry_id = e.id))
    order by i.confirmed_at limit ${limit}`);
  for (const { id } of rows) await deps.db.transaction((tx) => proveIntentPayment(tx, deps, id));
  return rows.length;
}

async function verifyOne(deps: VerifyDeps, intent: Candidate): Promise<void> {
  const chainId = Number(intent.chain_id);
  const rpc = deps.rpcs.get(chainId);
  if (!rpc) return;
  const ref = { type: 'checkout_intent', id: intent.id };
  const receipt = await receiptTransfers(rpc, deps.chains, chainId, intent.hash as `0x${string}`);
  const findings: FindingDraft[] = [];
  // tx_to is not the merchant wallet of the intent's store: whatever the receipt shows, it proves
  // nothing of this intent (proveIntentPayment never books it).
  const foreign = notStoreWalletFinding(deps.stores, {
    id: intent.id,
    store_id: intent.store_id,
    chain_id: intent.chain_id,
    tx_to: intent.tx_to,
    tx_hash: intent.hash,
    tx_hash_2: null,
  });
  if (foreign) findings.push(foreign);
  // A cause that cleared since an earlier verification (a node that lagged, a receipt read
  // again) resolves its finding; proveIntentPayment resolves them all once the payment is proven.
  const cleared: string[] = [];
  if (receipt.status !== 'not_found') cleared.push('payment_tx_not_found');
  if (receipt.status === 'success') cleared.push('payment_tx_reverted');
  if (receipt.status === 'not_found') {
    findings.push({
      kind: 'payment_tx_not_found',
      severity: 'critical',
      ref,
      details: { chain_id: chainId, tx_hash: intent.hash },
    });
  } else if (receipt.status === 'reverted') {
    findings.push({
      kind: 'payment_tx_reverted',
      severity: 'critical',
      ref,
      details: { chain_id: chainId, tx_hash: intent.hash, block_number: receipt.blockNumber.toString() },
    });
  } else {
    await storeReceiptTransfers(deps.db, receipt.transfers);
    const expectedToken = intent.coin_contract ? deps.chains.token(chainId, intent.coin_contract) : undefined;
    const amount = await inTransitOf(deps.db, intent.id);
    const recipient = intent.tx_to?.toLowerCase();
    const candidate = paymentCandidate(receipt.transfers, {
      recipient,
      tokenAddress: intent.coin_contract ?? undefined,
      amount,
    });
    if (!candidate) {
      findings.push({
        kind: 'payment_transfer_missing',
        severity: 'critical',
        ref,
        details: { chain_id: chainId, tx_hash: intent.hash, what: 'the transaction moved no ERC-20 token' },
      });
    } else {
      cleared.push('payment_transfer_missing');
    }
    if (candidate && expectedToken && amount !== null && recipient) {
      const outcome = paymentProven({
        storeId: intent.store_id,
        intentId: intent.id,
        transfer: candidate,
        token: deps.chains.token(chainId, candidate.tokenAddress) ?? null,
        expected: { token: expectedToken, recipient: recipient as `0x${string}`, amount },
      });
      findings.push(...outcome.findings);
    }
  }
  await deps.db.transaction(async (tx) => {
    for (const kind of cleared) await resolveFinding(tx, kind, ref);
    for (const f of findings) await recordFinding(tx, f, intent.store_id);
  });
}

/**
 * The transfer of a receipt that stands for the intent's payment, for rule 2's checks: the log
 * into the recipient in the intent's token that carries N (one transaction may pay several
 * intents, in any log order); else, when several such logs sum to N (a split payment, as the
 * proof accepts), their sum as one; else the first log into the recipient, else the first log, so
 * that the findings name what was paid instead.
 */
export function paymentCandidate(
  transfers: ChainTransferFact[],
  expected: { recipient: string | undefined; tokenAddress: string | undefined; amount: bigint | null },
): ChainTransferFact | undefined {
  const intoRecipient = transfers.filter((t) => t.to.toLowerCase() === expected.recipient);
  const ofToken = intoRecipient.filter(
    (t) => t.tokenAddress.toLowerCase() === expected.tokenAddress?.toLowerCase(),
  );
  if (expected.amount !== null) {
    const exact = ofToken.find((t) => t.amount === expected.amount);
    if (exact) return exact;
    const sum = ofToken.reduce((total, t) => total + t.amount, 0n);
    const [first] = ofToken;
    if (first && ofToken.length > 1 && sum === expected.amount) return { ...first, amount: sum };
  }
  return intoRecipient[0] ?? transfers[0];
}
