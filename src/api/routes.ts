import { z } from 'zod';
import type { ChainRegistry } from '../config/chainRegistry.ts';
import type { Db } from '../db/database.ts';
import { listFindings } from '../findings/listFindings.ts';
import { balances, trialBalance } from '../ledger/balances.ts';
import { type EntryView, entryView, listEntries } from '../ledger/listEntries.ts';
import { currencyMinorUnit } from '../money/currencyMinorUnits.ts';
import { formatDecimalAmount, parseDecimalAmount } from '../money/decimalAmount.ts';
import { formatFiat } from '../money/formatFiat.ts';
import { intentIdsByOrderId, type ShownIntent, showIntent } from '../payments/showIntent.ts';
import { PayoutNotFoundError } from '../payouts/errors.ts';
import { showPayout } from '../payouts/showPayout.ts';
import { valueEntry } from '../valuation/valueEntry.ts';
import {
  type IntentRate,
  intentRatesOf,
  loadRateBook,
  type RateBook,
  type StoreValuation,
  type ValuedAccount,
  valueLedger,
} from '../valuation/valueLedger.ts';
import { encodeCursor } from './cursor.ts';
import { type AnyApiRoute, defineRoute, NotFound } from './route.ts';
import {
  apiSchemas,
  balancesQuery,
  balancesResponse,
  entriesQuery,
  entriesResponse,
  type entry,
  findingsQuery,
  findingsResponse,
  idParams,
  type intentDetail,
  intentResponse,
  intentsQuery,
  intentsResponse,
  payoutResponse,
} from './schemas.ts';

/** What the read API reads: the database, and the chain registry (tokens' decimals, chain names). */
export interface ReadApiDomain {
  db: Db;
  chains: ChainRegistry;
  /** The stores' par policies (STORES_FILE), for `value=CUR`; none: no par. */
  stores?: readonly { storeId: string; par?: ReadonlyMap<string, string> }[];
  /** showPayout's: the API never opens a claim secret, it only hands the key through. */
  encryptionKey: Buffer;
}

const DEFAULT_LIMIT = 100;

/** The OpenAPI document itself: any JSON object (its own schema is the OpenAPI 3.1 one). */
const openApiDocument = z
  .looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.record(z.string(), z.unknown()) })
  .describe('this document');
apiSchemas.add(openApiDocument, { id: 'OpenApiDocument' });

export function readApiRoutes(domain: ReadApiDomain, document: () => Record<string, unknown>): AnyApiRoute[] {
  const { db } = domain;
  return [
    defineRoute({
      path: '/intents/{id}',
      operationId: 'getIntent',
      summary: 'One checkout intent',
      description:
        'The intent as last seen, its status history, its ledger entries with their postings, its payment on chain (transaction, block, proven or not) and its open findings.',
      params: idParams,
      query: undefined,
      response: intentResponse,
      okDescription: 'the intent',
      notFound: 'the intent is not tracked',
      handle: async ({ params }) => {
        const shown = await showIntent(domain, params.id);
        if (!shown) return new NotFound(`intent ${params.id} is not tracked`);
        return { ok: true as const, intent: intentOut(shown) };
      },
    }),
    defineRoute({
      path: '/intents',
      operationId: 'listIntentsByOrder',
      summary: 'The checkout intents of an order',
      description:
        'Every tracked intent created with this order id (at most 50, newest tracked first), each as GET /intents/{id} shows it. None is an empty list, not a 404.',
      params: undefined,
      query: intentsQuery,
      response: intentsResponse,
      okDescription: 'the intents of the order',
      handle: async ({ query }) => {
        const ids = await intentIdsByOrderId(db, query.order_id, { storeId: query.store, limit: 50 });
        const intents: z.output<typeof intentDetail>[] = [];
        for (const id of ids) {
          const shown = await showIntent(domain, id);
          if (shown) intents.push(intentOut(shown));
        }
        return { ok: true as const, intents };
      },
    }),
    defineRoute({
      path: '/payouts/{id}',
      operationId: 'getPayout',
      summary: 'One claim-link payout',
      description:
        'A payout by payout id or claim-link id: its state, link status, amounts, ledger entries and open findings. Its claim URL and token are secrets and never part of an answer.',
      params: idParams,
      query: undefined,
      response: payoutResponse,
      okDescription: 'the payout',
      notFound: 'no payout has this id or claim-link id',
      handle: async ({ params }) => {
        let shown: Awaited<ReturnType<typeof showPayout>>;
        try {
          shown = await showPayout(domain, params.id, { reveal: false });
        } catch (err) {
          if (err instanceof PayoutNotFoundError) return new NotFound(`payout ${params.id} does not exist`);
          throw err;
        }
        const p = shown.payout;
        const token = domain.chains.tokenBySymbol(p.chain_id, p.coin);
        return {
          ok: true as const,
          payout: {
            id: p.id,
            store_id: p.store_id,
            reference_id: p.reference_id,
            amount: p.amount,
            amount_base_units: token ? baseUnitsOf(p.amount, token.decimals) : null,
            coin: p.coin,
            chain_id: p.chain_id,
            token_address: p.token_address,
            receiver_email: p.receiver_email,
            sender_name: p.sender_name,
            sender_message: p.sender_message,
            create_outcome: p.create_outcome,
            attempts: p.attempts,
            last_error: p.last_error,
            idempotent_hit: p.idempotent_hit,
            claim_link_id: p.claim_link_id,
            link_status: p.link_status,
            funding_tx_hash: p.funding_tx_hash,
            funded_amount: p.funded_amount,
            pool_address: p.pool_address,
            funded_at: p.funded_at,
            expires_at: p.expires_at,
            claimed_at: p.claimed_at,
            claimed_reported_at: p.claimed_reported_at,
            cancelled_at: p.cancelled_at,
            expired_at: p.expired_at,
            refund_tx_hash: p.refund_tx_hash,
            refunded_at: p.refunded_at,
            created_at: p.created_at,
            updated_at: p.updated_at,
            entries: shown.entries.map(entryOut),
            findings: shown.findings,
          },
        };
      },
    }),
    defineRoute({
      path: '/balances',
      operationId: 'getBalances',
      summary: 'Account balances and the trial balance',
      description:
        "Every account's balance (of one store, or all), now or as of a time (by when movements happened), in base units and as a decimal; and the trial balance per asset, which must net to zero.",
      params: undefined,
      query: balancesQuery,
      response: balancesResponse,
      okDescription: 'the balances',
      handle: async ({ query }) => {
        const rows = await balances(db, { storeId: query.store, at: query.at });
        const trial = await trialBalance(db, { storeId: query.store, at: query.at });
        const valuation =
          query.value === undefined
            ? undefined
            : await valueLedger(db, {
                currency: query.value,
                at: query.at,
                storeId: query.store,
                stores: storesPar(domain),
              });
        const valued = new Map(valuation?.accounts.map((a) => [a.code, a]));
        const fiat = (minor: bigint | null) =>
          minor === null || valuation === undefined ? null : formatFiat(minor, valuation.minorUnit);
        return {
          ok: true as const,
          at: query.at?.toISOString() ?? null,
          ...(valuation && {
            valuation: {
              currency: valuation.currency,
              closing_date: valuation.closingDate,
              rounding: [...valuation.rounding].map(([store, minor]) => ({
                store_id: store,
                value: formatFiat(minor, valuation.minorUnit),
              })),
              missing_rates: valuation.missing.map((m) => ({
                store_id: m.storeId,
                date: m.date,
                symbol: m.symbol,
              })),
            },
          }),
          accounts: rows.map((b) => ({
            code: b.code,
            type: b.type,
            store_id: b.storeId,
            chain_id: b.chainId,
            token: b.token,
            symbol: b.symbol,
            decimals: b.decimals,
            asset: b.asset,
            balance: b.balance.toString(),
            balance_decimal: formatDecimalAmount(b.balance, b.decimals),
            ...(valuation && valuedFields(valued.get(b.code), fiat)),
          })),
          trial_balance: trial.map((t) => ({
            asset: t.asset,
            symbol: t.symbol,
            decimals: t.decimals,
            debits: t.debits.toString(),
            debits_decimal: formatDecimalAmount(t.debits, t.decimals),
            credits: t.credits.toString(),
            credits_decimal: formatDecimalAmount(t.credits, t.decimals),
            net: t.net.toString(),
            net_decimal: formatDecimalAmount(t.net, t.decimals),
          })),
        };
      },
    }),
    defineRoute({
      path: '/findings',
      operationId: 'listFindings',
      summary: 'Findings',
      description:
        'The disagreements the daemon and the reconciliation runs found, newest first, a page at a time (next_cursor).',
      params: undefined,
      query: findingsQuery,
      response: findingsResponse,
      okDescription: 'a page of findings',
      handle: async ({ query }) => {
        const limit = query.limit ?? DEFAULT_LIMIT;
        const rows = await listFindings(db, {
          openOnly: query.status === 'open',
          resolvedOnly: query.status === 'resolved',
          kind: query.kind,
          severity: query.severity,
          storeId: query.store,
          order: 'id',
          beforeId: query.cursor,
          limit: limit + 1,
        });
        const page = rows.slice(0, limit);
        const last = page.at(-1);
        return {
          ok: true as const,
          findings: page.map((f) => ({
            id: f.id,
            kind: f.kind,
            severity: f.severity,
            store_id: f.storeId,
            ref_type: f.refType,
            ref_id: f.refId,
            details: f.details,
            first_seen_at: f.firstSeenAt,
            last_seen_at: f.lastSeenAt,
            resolved_at: f.resolvedAt,
            acked_at: f.ackedAt,
            ack_note: f.ackNote,
          })),
          next_cursor: rows.length > limit && last ? encodeCursor('findings', BigInt(last.id)) : null,
        };
      },
    }),
    defineRoute({
      path: '/entries',
      operationId: 'listEntries',
      summary: 'Ledger entries by period',
      description:
        'Entries with their postings that occurred in [from, to) (either bound may be absent), of one store or all, newest first (by id), a page at a time (next_cursor).',
      params: undefined,
      query: entriesQuery,
      response: entriesResponse,
      okDescription: 'a page of entries',
      handle: async ({ query }) => {
        const limit = query.limit ?? DEFAULT_LIMIT;
        const rows = await listEntries(db, {
          from: query.from,
          to: query.to,
          storeId: query.store,
          beforeId: query.cursor,
          limit: limit + 1,
        });
        const page = rows.slice(0, limit);
        const last = page.at(-1);
        const value =
          query.value === undefined
            ? undefined
            : {
                currency: query.value,
                minorUnit: currencyMinorUnit(query.value),
                rateOn: await loadRateBook(db, query.value, storesPar(domain)),
                intentRates: await intentRatesOf(
                  db,
                  page.map((e) => e.id),
                ),
              };
        return {
          ok: true as const,
          entries: page.map((e) => {
            const view = entryView(e);
            return value === undefined
              ? entryOut(view)
              : valuedEntryOut(view, value.intentRates.get(view.id) ?? null, value);
          }),
          next_cursor: rows.length > limit && last ? encodeCursor('entries', last.id) : null,
        };
      },
    }),
    defineRoute({
      path: '/openapi.json',
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI 3.1 document',
      description: 'Generated from the schemas the routes validate with and answer by.',
      params: undefined,
      query: undefined,
      response: openApiDocument,
      okDescription: 'the OpenAPI 3.1 document',
      handle: async () => document() as z.output<typeof openApiDocument>,
    }),
  ];
}

function intentOut(s: ShownIntent): z.output<typeof intentDetail> {
  const i = s.intent;
  return {
    id: i.id,
    store_id: i.store_id,
    status: i.status,
    status_name: i.status_name,
    amount_coins: i.amount_coins,
    coin_symbol: i.coin_symbol,
    chain_id: i.chain_id,
    order_id: i.order_id,
    actual_paid_amount: i.actual_paid_amount,
    service_fee_amount: i.service_fee_amount,
    net_income_amount: i.net_income_amount,
    tx_hash: i.tx_hash,
    tx_hash_2: i.tx_hash_2,
    tx_to: i.tx_to,
    tracked_via: i.tracked_via,
    tracked_at: i.tracked_at,
    status_changed_at: i.status_changed_at,
    confirmed_at: i.confirmed_at,
    settled_by: i.settled_by,
    poll_count: i.poll_count,
    updated_at: i.updated_at,
    history: s.history,
    entries: s.entries.map(entryOut),
    chain_proof: s.chain_proof,
    findings: s.findings,
  };
}

function entryOut(e: EntryView): z.output<typeof entry> {
  return {
    id: e.id,
    kind: e.kind,
    occurred_at: e.occurred_at,
    recorded_at: e.recorded_at,
    store_id: e.store_id,
    ref_type: e.ref_type,
    ref_id: e.ref_id,
    reverses_entry_id: e.reverses_entry_id,
    memo: e.memo,
    postings: e.postings.map((p) => ({
      account: p.account,
      asset: p.asset,
      symbol: p.symbol,
      decimals: p.decimals,
      amount: p.amount,
      amount_decimal: formatDecimalAmount(BigInt(p.amount), p.decimals),
    })),
  };
}

/** A balance's fiat fields (`value=CUR`): an account with no posting before `at` is valued at 0. */
function valuedFields(a: ValuedAccount | undefined, fiat: (minor: bigint | null) => string | null) {
  if (a === undefined) return { value: fiat(0n), unvalued: 0, closing_value: null, unrealised: null };
  return {
    value: a.unvalued > 0 ? null : fiat(a.value),
    unvalued: a.unvalued,
    closing_value: fiat(a.closingValue),
    unrealised: fiat(a.unrealised),
  };
}

/** An entry with each posting valued at its day's rate, as valueLedger and the exports value it. */
function valuedEntryOut(
  e: EntryView,
  intent: IntentRate | null,
  v: { currency: string; minorUnit: number; rateOn: RateBook },
): z.output<typeof entry> {
  const day = e.occurred_at.slice(0, 10);
  const valued = valueEntry(
    e.postings.map((p) => ({
      accountCode: p.account,
      symbol: p.symbol,
      decimals: p.decimals,
      amount: BigInt(p.amount),
    })),
    (symbol) => v.rateOn(e.store_id, day, symbol, intent),
    v.minorUnit,
  );
  const out = entryOut(e);
  return {
    ...out,
    postings: out.postings.map((p, i) => {
      const minor = valued.postings[i]?.value ?? null;
      return { ...p, value: minor === null ? null : formatFiat(minor, v.minorUnit) };
    }),
    value_rounding: valued.rounding === null ? null : formatFiat(valued.rounding, v.minorUnit),
  };
}

/** The par policies valueLedger and loadRateBook take. */
function storesPar(domain: ReadApiDomain): StoreValuation[] {
  return (domain.stores ?? []).map((s) => ({ storeId: s.storeId, par: s.par ?? new Map() }));
}

function baseUnitsOf(amount: string, decimals: number): string | null {
  try {
    return parseDecimalAmount(amount, decimals).toString();
  } catch {
    return null;
  }
}
