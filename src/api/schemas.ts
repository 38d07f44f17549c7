import { z } from 'zod';
import { isCurrencyCode } from '../money/currencyMinorUnits.ts';
import { decodeCursor } from './cursor.ts';

/**
 * The read API's schemas, params and queries as the routes validate them and responses as the
 * handlers are typed by (z.output): the OpenAPI document is generated from these (openapi.ts), so
 * what the code checks and returns is what the document says.
 *
 * Money is never a JSON number: base units are integer strings, decimal amounts decimal strings.
 * Responses are registered in `apiSchemas` by id: each is one component of the document.
 */
export const apiSchemas = z.registry<{ id: string }>();

function component<T extends z.ZodType>(id: string, schema: T): T {
  apiSchemas.add(schema, { id });
  return schema;
}

// ---------- values ----------

const timestamp = z.iso.datetime().describe('ISO 8601 time, UTC');
const baseUnits = z
  .string()
  .regex(/^-?\d+$/)
  .describe("an amount in the token's base units, as an integer string (never a JSON number)");
const decimalAmount = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/)
  .describe("the same amount in whole tokens: a decimal string with at most the token's decimals");
const fiatValue = z
  .string()
  .regex(/^-?\d+(\.\d+)?$/)
  .describe(
    'a value in the asked currency (`value`), a decimal string with its minor digits ("22.81"); null: unvalued (no rate), never 0',
  );
const idString = z.string().regex(/^\d+$/).describe('a numeric id, as a string');
const severity = z.enum(['info', 'warning', 'critical']);
const cursorText = z.string().describe('opaque: pass it back as `cursor` to read the next page');

// ---------- shared components ----------

export const errorResponse = component(
  'Error',
  z
    .object({
      ok: z.literal(false),
      reason: z.string().describe('what was wrong; a bad parameter is named first, e.g. `limit: ...`'),
    })
    .describe('every answer other than 200'),
);

export const posting = component(
  'Posting',
  z
    .object({
      account: z.string().describe('account code, e.g. assets:wallet:st_a:8453:USDC'),
      asset: z.string(),
      symbol: z.string(),
      decimals: z.int().min(0),
      amount: baseUnits.describe('debit positive, credit negative, in base units'),
      amount_decimal: decimalAmount,
      value: fiatValue
        .nullable()
        .optional()
        .describe('with `value=CUR` (GET /entries): the posting valued at its day’s rate; null: no rate'),
    })
    .describe('one line of an entry; the lines of an entry sum to zero per asset'),
);

export const entry = component(
  'Entry',
  z
    .object({
      id: idString,
      kind: z.string().describe('the posting rule, e.g. checkout.confirmed'),
      occurred_at: timestamp.describe('when the movement happened'),
      recorded_at: timestamp.describe('when it was booked'),
      store_id: z.string(),
      ref_type: z.string(),
      ref_id: z.string().describe('the intent, claim link or transfer it is about'),
      reverses_entry_id: idString.nullable(),
      memo: z.string().nullable(),
      postings: z.array(posting),
      value_rounding: fiatValue
        .nullable()
        .optional()
        .describe(
          "with `value=CUR` (GET /entries): the fx:rounding line, minus the postings' values; null when one is unvalued",
        ),
    })
    .describe('a ledger entry with its postings'),
);

export const findingRef = component(
  'FindingRef',
  z
    .object({ id: idString, kind: z.string(), severity, first_seen_at: timestamp })
    .describe('an open finding'),
);

// ---------- intents ----------

const statusName = z.string().describe('the status by name, e.g. CONFIRMED');

export const chainTransfer = component(
  'ChainTransfer',
  z.object({
    tx_hash: z.string(),
    log_index: z.int().min(0),
    block_number: idString,
    block_hash: z.string(),
    state: z.enum(['pending', 'final', 'orphaned']),
    to_address: z.string(),
    token: z.string().describe('token contract address'),
    symbol: z.string().nullable(),
    value: baseUnits,
    value_decimal: decimalAmount.nullable().describe('null when the token is not in the chain registry'),
    matched_as: z.array(z.string()).describe('what the ledger booked from it; empty until booked'),
    final_at: timestamp.nullable(),
  }),
);

export const intentDetail = component(
  'Intent',
  z
    .object({
      id: z.string(),
      store_id: z.string(),
      status: z.int().nullable().describe('the service status code; null until the intent is first read'),
      status_name: statusName.nullable(),
      amount_coins: z.string().nullable().describe('decimal string, as the service sent it'),
      coin_symbol: z.string().nullable(),
      chain_id: z.int().nullable(),
      order_id: z.string().nullable(),
      actual_paid_amount: z.string().nullable().describe('decimal string, as the service sent it'),
      service_fee_amount: z.string().nullable().describe('decimal string, as the service sent it'),
      net_income_amount: z.string().nullable().describe('decimal string, as the service sent it'),
      tx_hash: z.string().nullable(),
      tx_hash_2: z.string().nullable(),
      tx_to: z.string().nullable(),
      tracked_via: z.string(),
      tracked_at: timestamp,
      status_changed_at: timestamp.nullable(),
      confirmed_at: timestamp.nullable(),
      settled_by: z.string().nullable(),
      poll_count: z.int().min(0),
      updated_at: timestamp,
      history: z.array(
        z.object({
          from_status: z.int().nullable(),
          from_status_name: statusName.nullable(),
          to_status: z.int(),
          to_status_name: statusName,
          source: z.string().describe('webhook, poll, create or track'),
          observed_at: timestamp,
        }),
      ),
      entries: z.array(entry).describe('its ledger entries, oldest first'),
      chain_proof: z
        .object({
          chain_id: z.int().nullable(),
          chain_name: z.string().nullable(),
          tx_hash: z.string().nullable().describe('the payment transaction the intent names'),
          proven: z
            .boolean()
            .describe('a final transfer into the merchant wallet proved the payment (rule 2)'),
          transfers: z.array(chainTransfer).describe("that transaction's logs the indexer stored"),
        })
        .describe('the payment as the chain shows it'),
      findings: z.array(findingRef).describe('open findings about the intent'),
    })
    .describe('a tracked checkout intent'),
);

export const intentResponse = component(
  'IntentResponse',
  z.object({ ok: z.literal(true), intent: intentDetail }),
);
export const intentsResponse = component(
  'IntentsResponse',
  z.object({ ok: z.literal(true), intents: z.array(intentDetail).describe('newest tracked first') }),
);

// ---------- payouts ----------

export const payoutDetail = component(
  'Payout',
  z
    .object({
      id: z.string(),
      store_id: z.string(),
      reference_id: z.string(),
      amount: decimalAmount.describe('the claimable amount, a decimal string'),
      amount_base_units: baseUnits.nullable().describe('null when the token is not in the chain registry'),
      coin: z.string(),
      chain_id: z.int(),
      token_address: z.string(),
      receiver_email: z.string().nullable(),
      sender_name: z.string().nullable(),
      sender_message: z.string().nullable(),
      create_outcome: z.string().describe('pending, created, failed or unknown'),
      attempts: z.int().min(0),
      last_error: z.string().nullable(),
      idempotent_hit: z.boolean(),
      claim_link_id: z.string().nullable(),
      link_status: z.string().nullable().describe("the claim link's status as last learnt"),
      funding_tx_hash: z.string().nullable(),
      funded_amount: z.string().nullable().describe('decimal string, as the service sent it'),
      pool_address: z.string().nullable(),
      funded_at: timestamp.nullable(),
      expires_at: timestamp.nullable(),
      claimed_at: timestamp.nullable(),
      claimed_reported_at: timestamp.nullable(),
      cancelled_at: timestamp.nullable(),
      expired_at: timestamp.nullable(),
      refund_tx_hash: z.string().nullable(),
      refunded_at: timestamp.nullable(),
      created_at: timestamp,
      updated_at: timestamp,
      entries: z.array(entry).describe("the claim link's ledger entries, oldest first"),
      findings: z.array(findingRef).describe('open findings about the payout or its link'),
    })
    .describe('a claim-link payout; its claim URL and token are secrets and never part of it'),
);

export const payoutResponse = component(
  'PayoutResponse',
  z.object({ ok: z.literal(true), payout: payoutDetail }),
);

// ---------- balances ----------

export const accountBalance = component(
  'AccountBalance',
  z.object({
    code: z.string(),
    type: z.string(),
    store_id: z.string(),
    chain_id: z.int(),
    token: z.string(),
    symbol: z.string(),
    decimals: z.int().min(0),
    asset: z.string(),
    balance: baseUnits,
    balance_decimal: decimalAmount,
    value: fiatValue
      .nullable()
      .optional()
      .describe('with `value=CUR`: the sum of the valued postings (valued cost); null while any is unvalued'),
    unvalued: z.int().min(0).optional().describe('with `value=CUR`: postings no rate values'),
    closing_value: fiatValue
      .nullable()
      .optional()
      .describe('with `value=CUR`, holding accounts: the balance at the closing day’s rate; null otherwise'),
    unrealised: fiatValue
      .nullable()
      .optional()
      .describe('with `value=CUR`, holding accounts: closing_value − value, a gain positive; null otherwise'),
  }),
);

export const trialBalanceLine = component(
  'TrialBalanceLine',
  z
    .object({
      asset: z.string(),
      symbol: z.string(),
      decimals: z.int().min(0),
      debits: baseUnits,
      debits_decimal: decimalAmount,
      credits: baseUnits,
      credits_decimal: decimalAmount,
      net: baseUnits.describe('zero when the books balance'),
      net_decimal: decimalAmount,
    })
    .describe("an asset's balances summed: debits and credits must cancel"),
);

export const balancesResponse = component(
  'BalancesResponse',
  z.object({
    ok: z.literal(true),
    at: timestamp.nullable().describe('the time asked for; null: now'),
    accounts: z.array(accountBalance),
    trial_balance: z.array(trialBalanceLine),
    valuation: z
      .object({
        currency: z.string().describe('ISO 4217 code asked for (`value`)'),
        closing_date: z.string().describe('the UTC day whose rates revalue the holdings'),
        rounding: z
          .array(z.object({ store_id: z.string(), value: fiatValue }))
          .describe("per store, the sum of the valued entries' fx:rounding lines"),
        missing_rates: z
          .array(z.object({ store_id: z.string(), date: z.string(), symbol: z.string() }))
          .describe('days and coins without a rate: their postings are unvalued'),
      })
      .optional()
      .describe('with `value=CUR` (docs/accounting.md, "Valuation")'),
  }),
);

// ---------- findings ----------

export const finding = component(
  'Finding',
  z.object({
    id: idString,
    kind: z.string(),
    severity,
    store_id: z.string().nullable(),
    ref_type: z.string(),
    ref_id: z.string(),
    details: z.record(z.string(), z.unknown()),
    first_seen_at: timestamp,
    last_seen_at: timestamp,
    resolved_at: timestamp.nullable(),
    acked_at: timestamp.nullable(),
    ack_note: z.string().nullable(),
  }),
);

export const findingsResponse = component(
  'FindingsResponse',
  z.object({
    ok: z.literal(true),
    findings: z.array(finding).describe('newest first (by id)'),
    next_cursor: cursorText.nullable().describe('null on the last page'),
  }),
);

// ---------- entries ----------

export const entriesResponse = component(
  'EntriesResponse',
  z.object({
    ok: z.literal(true),
    entries: z.array(entry).describe('newest first (by id)'),
    next_cursor: cursorText.nullable().describe('null on the last page'),
  }),
);

// ---------- params and queries ----------

/** PostgreSQL's text cannot hold U+0000: a string with one was a 500 from the query. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the NUL character is what it refuses.
const NO_NUL = /^[^\u0000]*$/;

/** A path segment id: printable ASCII, no spaces. */
const pathId = z.string().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable characters');

/**
 * A time parameter. The ISO 8601 format alone lets through what PostgreSQL's timestamptz (and a JS
 * Date) refuses, each of which was a 500: year 0000, an instant past 9999 once its offset is
 * applied (`9999-12-31T23:59:59-23:59`), offsets no zone has. So: offsets from -14:00 to +14:00,
 * and the instant itself within years 0001 to 9999 (UTC).
 */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');
const queryTime = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 time with a zone, e.g. 2025-01-31T00:00:00Z' })
  .regex(/(Z|[+-](0\d|1[0-3]):[0-5]\d|[+-]14:00)$/, 'its offset must be Z or from -14:00 to +14:00')
  .transform((t, ctx) => {
    const at = new Date(t);
    const ms = at.getTime();
    if (Number.isNaN(ms) || ms < EARLIEST || ms > LATEST) {
      ctx.addIssue({ code: 'custom', message: 'must be between 0001-01-01 and 9999-12-31 (UTC)' });
      return z.NEVER;
    }
    return at;
  });

const storeParam = z
  .string()
  .regex(/^[\x21-\x7e]{1,128}$/, 'must be a store id')
  .optional()
  .describe('only this store (STORES_FILE store_id)');

/** `limit`: digits, 1 to 500; 100 when absent. */
export const limitParam = z
  .string()
  .regex(/^\d{1,6}$/, 'must be a whole number from 1 to 500')
  .transform(Number)
  .pipe(
    z.int().min(1, 'must be a whole number from 1 to 500').max(500, 'must be a whole number from 1 to 500'),
  )
  .optional()
  .describe('page size, 1 to 500 (default 100)');

function cursorParam(list: 'entries' | 'findings') {
  return z
    .string()
    .transform((c, ctx) => {
      const id = decodeCursor(list, c);
      if (id === undefined) {
        ctx.addIssue({ code: 'custom', message: 'is not a cursor this list gave (next_cursor)' });
        return z.NEVER;
      }
      return id;
    })
    .optional()
    .describe('next_cursor of the previous page');
}

export const idParams = z.strictObject({ id: pathId.describe('the id') });

export const intentsQuery = z.strictObject({
  order_id: z
    .string({ error: 'is required: the order id the intents were created with' })
    .min(1, 'must not be empty')
    .max(256, 'at most 256 characters')
    .regex(NO_NUL, 'must not hold a NUL character')
    .describe('the order id the intents were created with'),
  store: storeParam,
});

/** `value`: an ISO 4217 code; the answer then carries values in it (docs/decisions.md). */
const valueParam = z
  .string()
  .refine(isCurrencyCode, 'must be an ISO 4217 currency code in capitals, e.g. EUR')
  .optional()
  .describe('also value each figure in this currency (ISO 4217, e.g. EUR) at its day’s rate');

export const balancesQuery = z.strictObject({
  store: storeParam,
  value: valueParam,
  at: queryTime.optional().describe('balances as of this time (by when movements happened); absent: now'),
});

export const findingsQuery = z.strictObject({
  status: z
    .enum(['open', 'resolved', 'all'], { error: 'must be open, resolved or all' })
    .default('open')
    .describe('open (default): the cause has not cleared; resolved; or all'),
  kind: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a finding kind (lowercase, e.g. missing_webhook)')
    .optional()
    .describe('only this kind, e.g. missing_webhook'),
  severity: z
    .enum(['info', 'warning', 'critical'], { error: 'must be info, warning or critical' })
    .optional()
    .describe('only this severity'),
  store: storeParam,
  limit: limitParam,
  cursor: cursorParam('findings'),
});

export const entriesQuery = z
  .strictObject({
    from: queryTime.optional().describe('entries that occurred at or after this time'),
    to: queryTime.optional().describe('entries that occurred before this time'),
    store: storeParam,
    limit: limitParam,
    cursor: cursorParam('entries'),
    value: valueParam,
  })
  .refine((q) => !q.from || !q.to || q.to > q.from, { path: ['to'], message: 'must be after from' });
