/**
 * The create-checkout-intent request as the service reads it from the wire: the raw body bytes,
 * parsed and checked against every rule of the spec that needs no price. (The 0.1-coin floor
 * needs the conversion and lives in the engine; it is amount_cents' only lower bound, so an
 * integer of 0 or below is well-formed here and gets the floor's 50002 there.) Any failure is
 * 10001 "Validation error" with details naming each offending field: `{ <field>: <what is wrong> }`.
 *
 * Integers only: a JSON string ("USD", "1"), a boolean or a fraction is rejected, and so is an
 * integer beyond 2^53 - 1 (it may already have been rounded by JSON parsing). Fields the spec does
 * not list are ignored, as a lenient JSON API would.
 */
import { z } from 'zod';
import { type Currency, isCurrency } from '../../svc/models/currency.ts';
import type { StableCoin } from '../../svc/models/stableCoin.ts';
import { validationError } from '../sandboxApiError.ts';

export interface CreateCheckoutRequest {
  currency: Currency | null;
  stableCoin: StableCoin | null;
  /** As submitted: fiat cents, or stable-coin cents (100 = 1.00 coin). */
  amountCents: bigint;
  orderId: string | null;
  redirectUrl: string | null;
  orderDescription: string | null;
  userId: string | null;
  userName: string | null;
  extra: Record<string, unknown> | null;
  /** As listed (order kept: the first entry picks a fiat intent's settlement coin); null when omitted. */
  acceptedStableCoins: StableCoin[] | null;
}

const intOnly = (what: string) =>
  z.int({
    error: (issue) =>
      issue.input === undefined
        ? `is required: ${what} as a JSON integer`
        : typeof issue.input === 'string'
          ? `must be ${what} as a JSON integer; names and numeric strings are not accepted`
          : Number.isInteger(issue.input)
            ? `must be ${what} as a JSON integer within plus or minus 2^53 - 1`
            : `must be ${what} as a JSON integer`,
  });

const text = z.string({ error: 'must be a string or null' }).nullable().optional();

const coin = intOnly('a StableCoin integer (1 USDT, 2 USDC)').refine((v) => v === 1 || v === 2, {
  error: 'must be 1 (USDT) or 2 (USDC); other StableCoin values are reserved',
});

const wireSchema = z.object({
  currency: intOnly('a Currency enum integer (1 USD ... 73 KES)')
    .refine(isCurrency, { error: 'must be a Currency enum integer from 1 (USD) to 73 (KES)' })
    .nullable()
    .optional(),
  stable_coin: coin.nullable().optional(),
  amount_cents: intOnly('a number of cents'),
  order_id: text,
  redirect_url: text,
  order_description: text,
  user_id: text,
  user_name: text,
  extra: z.record(z.string(), z.unknown(), { error: 'must be a JSON object or null' }).nullable().optional(),
  accepted_stable_coins: z
    .array(coin, { error: 'must be a list of StableCoin integers or null' })
    .min(1, { error: 'must list at least one StableCoin when given' })
    .nullable()
    .optional(),
});

export function parseCreateCheckoutRequest(raw: Buffer | string): CreateCheckoutRequest {
  let body: unknown;
  try {
    body = JSON.parse(typeof raw === 'string' ? raw : raw.toString('utf8'));
  } catch {
    throw validationError({ body: 'must be valid JSON' });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationError({ body: 'must be a JSON object' });
  }
  const parsed = wireSchema.safeParse(body);
  if (!parsed.success) {
    const details: Record<string, string> = {};
    for (const issue of parsed.error.issues) {
      const field = issue.path.map(String).join('.') || 'body';
      details[field] ??= issue.message;
    }
    throw validationError(details);
  }
  const req = parsed.data;
  const hasCurrency = req.currency != null;
  const hasCoin = req.stable_coin != null;
  if (hasCurrency === hasCoin) {
    const reason = `set exactly one of currency or stable_coin; got ${hasCurrency ? 'both' : 'neither'}`;
    throw validationError({ currency: reason, stable_coin: reason });
  }
  return {
    currency: (req.currency ?? null) as Currency | null,
    stableCoin: (req.stable_coin ?? null) as StableCoin | null,
    amountCents: BigInt(req.amount_cents),
    orderId: req.order_id ?? null,
    redirectUrl: req.redirect_url ?? null,
    orderDescription: req.order_description ?? null,
    userId: req.user_id ?? null,
    userName: req.user_name ?? null,
    extra: req.extra ?? null,
    acceptedStableCoins: (req.accepted_stable_coins ?? null) as StableCoin[] | null,
  };
}
