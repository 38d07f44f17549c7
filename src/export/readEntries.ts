import { sql } from 'drizzle-orm';
import type { DbExecutor } from '../db/database.ts';
import type { AccountType } from '../ledger/accounts.ts';
import { type IntentRateColumns, intentRateJoin, intentRateOf } from '../valuation/valueLedger.ts';
import type { ExportAccount, ExportEntry, ExportPosting } from './exportModel.ts';

/**
 * The shared streaming reader of the export: the chart, the balances before the period, and the
 * period's entries page by page. Every read runs in the caller's transaction (repeatable read, so
 * the opening balances and the entries are one snapshot of the books).
 *
 * Entries come in keyset pages ordered by id (`id > last id of the previous page`), each page one
 * query with its postings aggregated per entry, so memory is one page whatever the ledger's size.
 * Ids, not `occurred_at`, order the pages: an id is unique and indexed, while a later entry may
 * carry an earlier date (a reversal keeps its original's date). The tools sort by date themselves.
 */

export interface EntrySelection {
  storeId: string | null;
  from: Date | null;
  to: Date | null;
}

/** Metadata keys whose values are transaction hashes, printed as tags when present. */
const TX_HASH_KEYS = ['tx_hash', 'tx_hash_2', 'funding_tx_hash', 'refund_tx_hash'] as const;

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** Every account of the store (or of every store), by code. */
export async function loadAccounts(db: DbExecutor, storeId: string | null): Promise<ExportAccount[]> {
  const { rows } = await db.execute<{
    id: string;
    code: string;
    type: AccountType;
    store_id: string;
    chain_id: string;
    token: string;
    symbol: string;
    decimals: number;
    asset: string;
  }>(sql`
    select id::text, code, type, store_id, chain_id::text, token, symbol, decimals, asset
    from ledger_accounts
    where ${storeId}::text is null or store_id = ${storeId}
    order by code`);
  return rows.map((r) => {
    const suffix = `:${r.store_id}:${r.chain_id}:${r.symbol}`;
    // The code is `<kind>:<store>:<chain>:<symbol>` (src/ledger/accounts.ts); the kind is
    // `<top>:<name>`. A store id may hold a colon, hence the suffix rather than a split.
    const kind = r.code.endsWith(suffix) ? r.code.slice(0, -suffix.length) : r.code;
    const kindName = kind.includes(':') ? kind.slice(kind.indexOf(':') + 1) : kind;
    return {
      id: BigInt(r.id),
      code: r.code,
      type: r.type,
      storeId: r.store_id,
      chainId: Number(r.chain_id),
      token: r.token,
      symbol: r.symbol,
      decimals: r.decimals,
      asset: r.asset,
      kindName,
    };
  });
}

/** Each account's balance over the postings before `from` (by occurred_at); zeros left out. */
export async function openingBalances(
  db: DbExecutor,
  accounts: ReadonlyMap<string, ExportAccount>,
  storeId: string | null,
  from: Date,
): Promise<ExportPosting[]> {
  const { rows } = await db.execute<{ account_id: string; balance: string }>(sql`
    select p.account_id::text, sum(p.amount)::text as balance
    from ledger_postings p join ledger_accounts a on a.id = p.account_id
    where p.occurred_at < ${from.toISOString()}::timestamptz
      and (${storeId}::text is null or a.store_id = ${storeId})
    group by p.account_id`);
  const lines: ExportPosting[] = [];
  for (const r of rows) {
    const account = accounts.get(r.account_id);
    if (!account) throw new Error(`export: account ${r.account_id} is not in the chart that was read`);
    const amount = BigInt(r.balance);
    if (amount !== 0n) lines.push({ account, amount });
  }
  return lines.sort((a, b) => (a.account.code < b.account.code ? -1 : 1));
}

/** The earliest occurred_at of the selected entries, or null when there is none. */
export async function firstEntryTime(db: DbExecutor, sel: EntrySelection): Promise<Date | null> {
  const { rows } = await db.execute<{ first: Date | string | null }>(sql`
    select min(e.occurred_at) as first from ledger_entries e where ${selected(sel)}`);
  const first = rows[0]?.first ?? null;
  return first === null ? null : new Date(first);
}

function selected(sel: EntrySelection) {
  return sql`(${iso(sel.from)}::timestamptz is null or e.occurred_at >= ${iso(sel.from)}::timestamptz)
    and (${iso(sel.to)}::timestamptz is null or e.occurred_at < ${iso(sel.to)}::timestamptz)
    and (${sel.storeId}::text is null or e.store_id = ${sel.storeId})`;
}

/**
 * The selected entries with their postings, in pages of `pageSize` ordered by id. The intent's
 * order id and the claim link's payout come from checkout_intents and payouts (by primary key and
 * unique claim_link_id), so a page stays one indexed query. With `intentRates` (a valued export)
 * each entry also carries its intent's own rate (intentRateJoin), whatever the period: the rule-1
 * entry that records it may be before `from`.
 */
export async function* entryPages(
  db: DbExecutor,
  accounts: ReadonlyMap<string, ExportAccount>,
  sel: EntrySelection,
  pageSize = 2000,
  intentRates = false,
): AsyncGenerator<ExportEntry[]> {
  let after = '0';
  for (;;) {
    const { rows } = await db.execute<
      {
        id: string;
        kind: string;
        occurred_at: Date | string;
        store_id: string;
        ref_type: string;
        ref_id: string;
        reverses_entry_id: string | null;
        memo: string | null;
        tx_hash: string | null;
        tx_hash_2: string | null;
        funding_tx_hash: string | null;
        refund_tx_hash: string | null;
        order_id: string | null;
        payout_id: string | null;
        payout_reference: string | null;
        postings: string[] | null;
      } & IntentRateColumns
    >(sql`
      with page as (
        select e.id, e.kind, e.occurred_at, e.store_id, e.ref_type, e.ref_id, e.reverses_entry_id, e.memo,
               e.metadata->>'tx_hash' as tx_hash, e.metadata->>'tx_hash_2' as tx_hash_2,
               e.metadata->>'funding_tx_hash' as funding_tx_hash, e.metadata->>'refund_tx_hash' as refund_tx_hash
        from ledger_entries e
        where e.id > ${after}::bigint and ${selected(sel)}
        order by e.id
        limit ${pageSize}
      )
      select page.id::text, page.kind, page.occurred_at, page.store_id,
             page.ref_type, page.ref_id, page.reverses_entry_id::text, page.memo,
             page.tx_hash, page.tx_hash_2, page.funding_tx_hash, page.refund_tx_hash,
             i.order_id, po.id as payout_id, po.reference_id as payout_reference,
             (select array_agg(p.account_id::text || ' ' || p.amount::text order by p.id)
              from ledger_postings p where p.entry_id = page.id) as postings,
             ${
               intentRates
                 ? sql`ir.intent_currency, ir.intent_rate`
                 : sql`null as intent_currency, null as intent_rate`
             }
      from page
      ${intentRates ? intentRateJoin(sql`page`) : sql``}
      left join checkout_intents i on page.ref_type = 'checkout_intent' and i.id = page.ref_id
      left join payouts po on page.ref_type = 'claim_link' and po.claim_link_id = page.ref_id
      order by page.id`);
    if (rows.length === 0) return;
    yield rows.map((r) => {
      const txHashes: Array<[string, string]> = [];
      for (const key of TX_HASH_KEYS) {
        const hash = r[key];
        if (hash !== null && hash !== '') txHashes.push([key, hash]);
      }
      return {
        id: BigInt(r.id),
        kind: r.kind,
        occurredAt: new Date(r.occurred_at),
        storeId: r.store_id,
        refType: r.ref_type,
        refId: r.ref_id,
        reversesEntryId: r.reverses_entry_id === null ? null : BigInt(r.reverses_entry_id),
        memo: r.memo,
        orderId: r.order_id,
        payoutId: r.payout_id,
        payoutReference: r.payout_reference,
        txHashes,
        ...(intentRates ? { intentRate: intentRateOf(r) } : {}),
        postings: (r.postings ?? []).map((text) => {
          const space = text.indexOf(' ');
          const accountId = text.slice(0, space);
          const account = accounts.get(accountId);
          if (!account)
            throw new Error(`export: entry ${r.id} posts to account ${accountId}, not in the chart`);
          return { account, amount: BigInt(text.slice(space + 1)) };
        }),
      };
    });
    after = rows[rows.length - 1]?.id ?? after;
    if (rows.length < pageSize) return;
  }
}
