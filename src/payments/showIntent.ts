import { sql } from 'drizzle-orm';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { DbExecutor } from '../db/database.ts';
import type { Severity } from '../findings/finding.ts';
import { type EntryView, entryView, listEntries } from '../ledger/listEntries.ts';
import { formatDecimalAmount } from '../money/decimalAmount.ts';
import { checkoutStatusName } from '../svc/models/checkoutStatus.ts';

/**
 * One tracked intent as `stablebooks intents show` and the read API show it: the intent as last
 * seen, its status history, its ledger entries (oldest first), the chain's side of its payment and
 * its open findings. Amounts of the service are its decimal strings; ledger amounts are base units.
 */
export interface ShownIntent {
  intent: {
    id: string;
    store_id: string;
    /** null until the first read of an intent first seen in a webhook. */
    status: number | null;
    status_name: string | null;
    amount_coins: string | null;
    coin_symbol: string | null;
    chain_id: number | null;
    order_id: string | null;
    actual_paid_amount: string | null;
    service_fee_amount: string | null;
    net_income_amount: string | null;
    tx_hash: string | null;
    tx_hash_2: string | null;
    tx_to: string | null;
    tracked_via: string;
    tracked_at: string;
    status_changed_at: string | null;
    confirmed_at: string | null;
    settled_by: string | null;
    poll_count: number;
    updated_at: string;
  };
  history: Array<{
    from_status: number | null;
    from_status_name: string | null;
    to_status: number;
    to_status_name: string;
    source: string;
    observed_at: string;
  }>;
  entries: EntryView[];
  /**
   * The payment on chain: the transaction the intent names (tx_hash_2 on the temporary-wallet
   * route, else tx_hash), its logs the indexer stored, and whether rule 2 proved it (a final log
   * into the merchant wallet booked as this intent's payment proof).
   */
  chain_proof: {
    chain_id: number | null;
    chain_name: string | null;
    tx_hash: string | null;
    proven: boolean;
    transfers: Array<{
      tx_hash: string;
      log_index: number;
      block_number: string;
      block_hash: string;
      state: 'pending' | 'final' | 'orphaned';
      to_address: string;
      token: string;
      symbol: string | null;
      value: string;
      value_decimal: string | null;
      matched_as: string[];
      final_at: string | null;
    }>;
  };
  findings: Array<{ id: string; kind: string; severity: Severity; first_seen_at: string }>;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
const name = (status: number | null) => (status === null ? null : checkoutStatusName(status as never));

/** The intent, or undefined when it is not tracked. */
export async function showIntent(
  deps: { db: DbExecutor; chains: ChainRegistry },
  id: string,
): Promise<ShownIntent | undefined> {
  const { db } = deps;
  const found = await db.execute<{
    id: string;
    store_id: string;
    status: number | null;
    amount_coins: string | null;
    coin_symbol: string | null;
    chain_id: string | null;
    order_id: string | null;
    actual_paid_amount: string | null;
    service_fee_amount: string | null;
    net_income_amount: string | null;
    tx_hash: string | null;
    tx_hash_2: string | null;
    tx_to: string | null;
    tracked_via: string;
    tracked_at: Date;
    status_changed_at: Date | null;
    confirmed_at: Date | null;
    settled_by: string | null;
    poll_count: number;
    updated_at: Date;
  }>(sql`
    select id, store_id, status, amount_coins, coin_symbol, chain_id::text, order_id, actual_paid_amount,
           service_fee_amount, net_income_amount, tx_hash, tx_hash_2, tx_to, tracked_via, tracked_at,
           status_changed_at, confirmed_at, settled_by, poll_count, updated_at
    from checkout_intents where id = ${id}`);
  const row = found.rows[0];
  if (!row) return undefined;
  const history = await db.execute<{
    from_status: number | null;
    to_status: number;
    source: string;
    observed_at: Date;
  }>(
    sql`select from_status, to_status, source, observed_at from checkout_intent_status_history where intent_id = ${id} order by id`,
  );
  const entries = await listEntries(db, { refId: id, limit: 1000 });
  const findings = await db.execute<{ id: string; kind: string; severity: Severity; first_seen_at: Date }>(
    sql`select id::text, kind, severity, first_seen_at from findings where ref_id = ${id} and resolved_at is null order by id`,
  );
  const chainId = row.chain_id === null ? null : Number(row.chain_id);
  return {
    intent: {
      ...row,
      status_name: name(row.status),
      chain_id: chainId,
      tracked_at: new Date(row.tracked_at).toISOString(),
      status_changed_at: iso(row.status_changed_at),
      confirmed_at: iso(row.confirmed_at),
      updated_at: new Date(row.updated_at).toISOString(),
    },
    history: history.rows.map((h) => ({
      from_status: h.from_status,
      from_status_name: name(h.from_status),
      to_status: h.to_status,
      to_status_name: checkoutStatusName(h.to_status as never),
      source: h.source,
      observed_at: new Date(h.observed_at).toISOString(),
    })),
    entries: entries.slice().reverse().map(entryView),
    chain_proof: await chainProof(deps, id, chainId, row.tx_hash_2 ?? row.tx_hash, row.tx_hash),
    findings: findings.rows.map((f) => ({
      id: f.id,
      kind: f.kind,
      severity: f.severity,
      first_seen_at: new Date(f.first_seen_at).toISOString(),
    })),
  };
}

/** Ids of the tracked intents with this order id (newest tracked first, at most `limit`). */
export async function intentIdsByOrderId(
  db: DbExecutor,
  orderId: string,
  options: { storeId?: string; limit?: number } = {},
): Promise<string[]> {
  const { rows } = await db.execute<{ id: string }>(sql`
    select id from checkout_intents
    where order_id = ${orderId}
      and (${options.storeId ?? null}::text is null or store_id = ${options.storeId ?? null}::text)
    order by tracked_at desc, id
    limit ${options.limit ?? 50}`);
  return rows.map((r) => r.id);
}

async function chainProof(
  deps: { db: DbExecutor; chains: ChainRegistry },
  intentId: string,
  chainId: number | null,
  paymentHash: string | null,
  firstHash: string | null,
): Promise<ShownIntent['chain_proof']> {
  const proof: ShownIntent['chain_proof'] = {
    chain_id: chainId,
    chain_name: chainId === null ? null : (deps.chains.chain(chainId)?.name ?? null),
    tx_hash: paymentHash?.toLowerCase() ?? null,
    proven: false,
    transfers: [],
  };
  if (chainId === null || !paymentHash) return proof;
  const hashes = [...new Set([paymentHash, firstHash].filter((h) => h !== null).map((h) => h.toLowerCase()))];
  // The logs of the intent's transactions that are its own or no one's yet (a batch payment's
  // transaction also holds other intents' logs).
  const { rows } = await deps.db.execute<{
    tx_hash: string;
    log_index: number;
    block_number: string;
    block_hash: string;
    state: 'pending' | 'final' | 'orphaned';
    to_address: string;
    token: string;
    value: string;
    matched_as: string | null;
    matched_ref: string | null;
    final_at: Date | null;
  }>(sql`
    select tx_hash, log_index, block_number::text, block_hash, state, to_address, token, value::text,
           matched_as, matched_ref, final_at
    from chain_transfers
    where chain_id = ${chainId} and tx_hash in (${sql.join(
      hashes.map((h) => sql`${h}`),
      sql`, `,
    )})
      and (matched_ref is null or matched_ref = ${intentId})
    order by block_number, log_index, id`);
  for (const r of rows) {
    const token = deps.chains.token(chainId, r.token);
    const matchedAs = r.matched_as ? r.matched_as.split(',') : [];
    if (r.state === 'final' && r.matched_ref === intentId && matchedAs.includes('payment_proof'))
      proof.proven = true;
    proof.transfers.push({
      tx_hash: r.tx_hash,
      log_index: r.log_index,
      block_number: r.block_number,
      block_hash: r.block_hash,
      state: r.state,
      to_address: r.to_address,
      token: r.token,
      symbol: token?.symbol ?? null,
      value: r.value,
      value_decimal: token ? formatDecimalAmount(BigInt(r.value), token.decimals) : null,
      matched_as: matchedAs,
      final_at: iso(r.final_at),
    });
  }
  return proof;
}
