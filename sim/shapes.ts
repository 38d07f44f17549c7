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
  reorg_drop:
    'a reorg drops a transfer that is never mined again (before it is read, read but not final, or booked)',
  reorg_remine: 'a reorg mines a transfer again in a later block, or at another log index at the same height',
  reorg_replace:
    'a reorg replaces a transfer at the same height by another transaction (another amount or recipient)',
  reorg_deep:
    "a reorg deeper than the finality depth replaces a booked transfer's block: the indexer must say so (reorg_beyond_finality)",
  two_chains:
    "a second chain (Base, tokens of 6 and 18 decimals) with the stores' wallets: intents, payouts and strangers on either chain",
} as const;

export type Shape = keyof typeof SHAPES;
export const ALL_SHAPES = Object.keys(SHAPES) as Shape[];

/** `all`, `none`, or a comma list of shape names; a clear error for an unknown one. */
export function parseShapes(list: string): Set<Shape> {
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
