/**
 * The shapes a world may take beyond the plain one (strangers paying, one transfer per refund, a
 * reorg that mines the same transfers again): each is a generator option, on by default, and
 * `npm run sim -- --shapes LIST` selects them (`--shapes list` prints this table). A shape that is
 * off draws nothing from the world's random stream, so `--shapes none` plays the worlds the
 * generator made before shapes existed (the old regression seeds replay with it).
 */
export const SHAPES = {
  watched_payer:
    "a watched wallet pays an intent (another store's merchant or custody wallet, or the same store's custody wallet), directly or through the temporary wallet",
  claim_to_watched:
    "a claim link is claimed into a watched wallet (the same store's merchant wallet, or another store's)",
  watched_send_back: 'a payment sent back to a payer that is a watched wallet',
  owner_moves: "the owner moves money between custody and merchant wallets, and between stores' wallets",
  refund_pieces:
    'a refund paid in 1 to 3 transfers, in one transaction or several, some late; or never completed',
  claimed_then_refunded: 'the service refunds a link it also let be claimed (it contradicts itself)',
  decimal_forms:
    "the service writes amounts as other decimal strings of the same value: padded to the token's decimals, zeros beyond them, a trailing zero",
  fiat_priced:
    'intents priced in a fiat currency (currency, amount_cents, currency_rate), converted by the service into R',
  lookalike_intent:
    "an intent naming the look-alike contract (a real token's symbol, not in the registry) as its coin_contract",
  near_equal_payouts:
    'payouts of equal and near-equal amounts minutes apart in one store (and one in another store), most with the create answer lost: fundings matched by amount',
  custody_outflows:
    "the owner withdraws from custody to a stranger, some of exactly a payout's amount while it waits for its create outcome",
  twin_intents:
    'two intents of the same amount and token in one merchant wallet at once, each paid by its own transaction',
  exact_stranger:
    "a stranger (or the payer again) pays exactly an open intent's amount into its merchant wallet; the service never names it",
  reorg_drop:
    'a reorg drops a transfer that is never mined again (before it is read, read but not final, or booked)',
  reorg_remine: 'a reorg mines a transfer again in a later block, or at another log index at the same height',
  reorg_replace:
    'a reorg replaces a transfer at the same height by another transaction (another amount or recipient)',
  reorg_deep:
    "a reorg deeper than the finality depth replaces a booked transfer's block: the indexer must say so (reorg_beyond_finality)",
  webhooks_lost:
    'the service never delivers any checkout webhook of a confirmed intent stablebooks tracks from its creation: only its polls tell (missing_webhook)',
  fee_mismatch:
    "the service reports a confirmed intent's net_income_amount off by a few base units from P - F, while the chain moves P - F (fee_arithmetic_mismatch)",
  stuck_intent:
    'the service never decides a paid intent: it stays ON_CHAIN, MANUAL_OPERATION or SEND_BACK for good (stuck_intent)',
  two_chains:
    "a second chain (Base, tokens of 6 and 18 decimals) with the stores' wallets: intents, payouts and strangers on either chain",
  near_equal_second_chain:
    'with two_chains, near-equal payouts move to the second chain as any other payout does, away from the withdrawals placed around them on the first',
  payment_pieces:
    'a confirmed payment in 2 or 3 transfers (direct or into the temporary wallet), some after the confirmation, some from another payer; the service names any one of them',
  bundle_payment:
    'one transfer pays two direct intents of one store and token; the service names it for both',
  cancelled_return:
    'a direct payment confirmed and proven, then CANCELED by the service and sent back to its payer from the merchant wallet',
  funding_pieces:
    'a claim link funded in two parts (the create answer names the first) or funded twice in full (then cancelled or expired and refunded whole)',
  cancel_races_claim: 'the service answers a cancel with success although the claim is already on chain',
  funding_resent:
    "a reorg drops a link's funding after the link was sent (before or after it is final) and the service sends the funding again under a new hash",
} as const;

export type Shape = keyof typeof SHAPES;
export const ALL_SHAPES = Object.keys(SHAPES) as Shape[];

/**
 * Shapes not in the default mix yet: the simulator still finds worlds of theirs the books get
 * wrong (docs/decisions.md, "Money in pieces and bundles in the simulator"). `--shapes all` and a
 * list naming them play them.
 */
export const PENDING_SHAPES: readonly Shape[] = [
  // Seeds 64 and 74: a payment in pieces whose reported figures do not add up (fee_mismatch):
  // rule 1 waits for the chain and books the net from the first piece proven, for good.
  'payment_pieces',
  // Seeds 38, 59 and 113 (a bundle, with fee_mismatch or a split funding beside it) and 103 (a
  // split funding): failures not yet understood.
  'bundle_payment',
  'funding_pieces',
  // Seed 8: a resend matched by amount took an owner's withdrawal of the same amount.
  'funding_resent',
];

/** The default mix: every shape but the pending ones. */
export const DEFAULT_SHAPES: readonly Shape[] = ALL_SHAPES.filter((s) => !PENDING_SHAPES.includes(s));

/** `default`, `all`, `none`, or a comma list of shape names; a clear error for an unknown one. */
export function parseShapes(list: string): Set<Shape> {
  if (list === 'default') return new Set(DEFAULT_SHAPES);
  if (list === 'all') return new Set(ALL_SHAPES);
  if (list === 'none') return new Set();
  const out = new Set<Shape>();
  for (const name of list.split(',')) {
    if (!(name in SHAPES))
      throw new Error(`--shapes: unknown shape ${name} (known: ${ALL_SHAPES.join(',')})`);
    out.add(name as Shape);
  }
  return out;
}
