import { sql } from 'drizzle-orm';
import type { PublicClient } from 'viem';
import { type Clock, systemClock } from '../clock.ts';
import type { Config, ReconSettings } from '../config/loadConfig.ts';
import type { Db, DbExecutor } from '../db/database.ts';
import { type AccountKind, account, accountCode } from '../ledger/accounts.ts';
import { accountBalance } from '../ledger/balances.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { parseDecimalAmount } from '../money/decimalAmount.ts';

/**
 * The one ERC-20 function a proof calls. Written out rather than viem's erc20Abi, so that loading
 * the reconciliation run does not load viem (~35 MB of a process's memory) when the clients
 * passed in already have it.
 */
const BALANCE_OF_ABI = [
  {
    type: 'function',
    name: 'balanceOf',
    stateMutability: 'view',
    inputs: [{ name: 'account', type: 'address' }],
    outputs: [{ type: 'uint256' }],
  },
] as const;

/**
 * Balance proofs (docs/accounting.md): for each watched (chain, token, wallet), the ledger's
 * balance of the accounts that hold that wallet equals balanceOf(wallet) at a finalized block.
 * The strongest check the daemon makes. The ledger side is read in one snapshot with the block
 * it is proven at; when the books cannot be compared at that block yet, or the chain cannot be
 * read, the proof is not made (ok null) with a reason: a balance that could not be read is never
 * a zero, and books still catching up are never a difference.
 *
 * - merchant wallet: accounts assets:wallet of the stores paid into it;
 * - custody wallet: accounts assets:custody of the stores funding links from it (a business's
 *   stores share one);
 * - an address configured in both roles holds both: each role's proof compares the accounts of
 *   both roles with its one balanceOf.
 *
 * The proof block is the lower of the cursor's finalized block and its block: the ledger can only
 * know transfers the indexer has stored (during a backfill, or after a reorg rewound the cursor,
 * the finalized block is above the cursor). At that block the books are compared when:
 * - no transfer of the wallet at or below it is still pending, or final and not booked yet;
 * - no booked transfer of the wallet is above it (a receipt-verified row ahead of the cursor);
 * - no booked transfer of the wallet sits in a block a reorg replaced, not yet unwound (rule 3).
 * Otherwise the proof is `waiting` (ok null), as the matcher will book or unwind them shortly.
 *
 * Payouts in flight (custody): rule 5 credits custody with the link amount when the service
 * answers, before its funding transfer is mined, let alone final. A created payout whose funding
 * is genuinely in flight is still in custody on chain at the proof block: its amount is added
 * back to the ledger side, and the proof says so (`inFlight`, `note`, and `details.in_flight` of
 * the stored row). In flight means: no log of its funding transaction out of this wallet is final
 * at or below the proof block, and either one is stored above that block (on chain after it), or
 * rule 5 booked the payout less than the in-flight window ago (RECON_IN_TRANSIT_MINUTES, on the
 * injected clock: time enough for the funding to be final, indexed and booked). Not added back,
 * so the proof fails, and the note says which payout and why (`details.not_added_back`):
 * - its funding transaction is final at or below the proof block and booked as something else
 *   than this link's funding (rule 9 `transfer_out_unmatched`, say): rule 5 and that booking both
 *   credited custody for one outflow;
 * - nothing of its funding is on chain at or below the proof block after the window: rule 5
 *   credited custody for money the chain has not moved (or moved under a hash we do not know).
 */
export interface BalanceProof {
  chainId: number;
  symbol: string;
  token: string;
  decimals: number;
  wallet: string;
  role: 'merchant' | 'custody';
  storeIds: string[];
  blockNumber: bigint | null;
  /** The books' balance at the proof block: the accounts' balance plus `inFlight`. */
  ledgerBalance: bigint;
  chainBalance: bigint | null;
  /** true: equal; false: they differ; null: could not be proven (see error). */
  ok: boolean | null;
  error: string | null;
  /** Booked out of custody by rule 5 but not on chain at the proof block (added back); 0 for merchants. */
  inFlight: bigint;
  /**
   * Why the ledger side differs from the accounts' balance (payouts in flight), and which payouts
   * booked out of custody were not added back and why; else null.
   */
  note: string | null;
  /** Payouts booked out of custody (rule 5) whose funding is not in flight, so not added back. */
  notAddedBack: NotAddedBack[];
}

/** A payout rule 5 booked out of custody whose funding is not in flight: why it is not added back. */
export interface NotAddedBack {
  payoutId: string;
  amount: bigint;
  reason: string;
}

export interface ProofDeps {
  db: Db;
  /** `recon.inTransitWindowMs` bounds a funding in flight (default `DEFAULT_IN_FLIGHT_WINDOW_MS`). */
  config: Pick<Config, 'stores' | 'chains'> & { recon?: Pick<ReconSettings, 'inTransitWindowMs'> };
  rpcs: Map<number, { client: PublicClient }>;
  /** The injected clock the in-flight window is read on (default: the system's). */
  clock?: Clock;
}

/** RECON_IN_TRANSIT_MINUTES' default: how long after rule 5 a funding not on chain yet is in flight. */
export const DEFAULT_IN_FLIGHT_WINDOW_MS = 60 * 60_000;

type Role = 'merchant' | 'custody';

/** One watched address of a chain, with the stores of each role it holds. */
interface AddressToProve {
  chainId: number;
  wallet: string;
  roles: Map<Role, string[]>;
}

function addressesToProve(config: ProofDeps['config']): AddressToProve[] {
  const byKey = new Map<string, AddressToProve>();
  for (const store of config.stores) {
    for (const [chainId, w] of store.wallets) {
      for (const role of ['merchant', 'custody'] as const) {
        const wallet = w[role].toLowerCase();
        const key = `${chainId}:${wallet}`;
        const entry = byKey.get(key) ?? { chainId, wallet, roles: new Map<Role, string[]>() };
        const stores = entry.roles.get(role) ?? [];
        if (!stores.includes(store.storeId)) stores.push(store.storeId);
        entry.roles.set(role, stores);
        byKey.set(key, entry);
      }
    }
  }
  return [...byKey.values()];
}

/** The (chain, token, wallet, role) series a configuration proves. */
function configuredSeries(
  config: ProofDeps['config'],
  chainId?: number,
): Array<[number, string, string, Role]> {
  const out: Array<[number, string, string, Role]> = [];
  for (const a of addressesToProve(config)) {
    if (chainId !== undefined && a.chainId !== chainId) continue;
    for (const token of config.chains.chain(a.chainId)?.tokens ?? []) {
      for (const role of a.roles.keys()) out.push([a.chainId, token.address.toLowerCase(), a.wallet, role]);
    }
  }
  return out;
}

/**
 * Proves every watched wallet and token (of one chain when given; of one store's wallets when
 * given) and stores the results, in one statement, so a reader of balance_proofs never sees half
 * a pass. A (chain, token, wallet, role) whose latest stored proof is no longer in the
 * configuration (of the chains this pass covers) is closed with a `retired` row: the alerts stop
 * following it.
 *
 * A store's wallets are the addresses it holds in either role. Each is proven whole, as an
 * unscoped pass proves it: a wallet the store shares (a business's custody wallet) compares the
 * accounts of every store that holds it, since balanceOf counts all of their money.
 */
export async function proveBalances(
  deps: ProofDeps,
  options: { chainId?: number; storeId?: string | null } = {},
): Promise<BalanceProof[]> {
  const proofs: BalanceProof[] = [];
  const storeId = options.storeId ?? null;
  for (const target of addressesToProve(deps.config)) {
    if (options.chainId !== undefined && target.chainId !== options.chainId) continue;
    if (storeId !== null && ![...target.roles.values()].some((stores) => stores.includes(storeId))) continue;
    for (const token of deps.config.chains.chain(target.chainId)?.tokens ?? []) {
      proofs.push(...(await proveAddress(deps, target, token)));
    }
  }
  await deps.db.transaction(async (tx) => {
    if (proofs.length > 0) {
      const rows = proofs.map(
        (p) => sql`(${p.chainId}::bigint, ${p.token.toLowerCase()}, ${p.symbol}, ${p.wallet}, ${p.role},
          ${p.blockNumber?.toString() ?? null}::bigint, ${p.ledgerBalance.toString()}::numeric,
          ${p.chainBalance?.toString() ?? null}::numeric, ${p.ok}::boolean, ${p.error}::text, ${JSON.stringify(proofDetails(p))}::jsonb)`,
      );
      await tx.execute(sql`
        insert into balance_proofs (chain_id, token, symbol, wallet, role, block_number, ledger_balance, chain_balance, ok, error, details)
        values ${sql.join(rows, sql`, `)}`);
    }
    await retireUnconfigured(tx, configuredSeries(deps.config, options.chainId), options.chainId);
  });
  return proofs;
}

function proofDetails(p: BalanceProof): Record<string, unknown> {
  return {
    store_ids: p.storeIds,
    ...(p.inFlight !== 0n || p.note ? { in_flight: p.inFlight.toString(), note: p.note } : {}),
    ...(p.notAddedBack.length > 0
      ? {
          not_added_back: p.notAddedBack.map((n) => ({
            payout_id: n.payoutId,
            amount: n.amount.toString(),
            reason: n.reason,
          })),
        }
      : {}),
  };
}

/**
 * The series whose latest row is not retired and that the configuration no longer proves get a
 * row `ok = null, details.retired = true` (their last figures kept), read by the alerts as "no
 * longer followed". Scoped to one chain when the pass was.
 */
async function retireUnconfigured(
  tx: DbExecutor,
  configured: Array<[number, string, string, Role]>,
  chainId: number | undefined,
): Promise<void> {
  const keep =
    configured.length === 0
      ? sql`false`
      : sql`(l.chain_id, l.token, l.wallet, l.role) in (${sql.join(
          configured.map(([c, t, w, r]) => sql`(${c}::bigint, ${t}::text, ${w}::text, ${r}::text)`),
          sql`, `,
        )})`;
  await tx.execute(sql`
    insert into balance_proofs (chain_id, token, symbol, wallet, role, block_number, ledger_balance, chain_balance, ok, error, details)
    select l.chain_id, l.token, l.symbol, l.wallet, l.role, l.block_number, l.ledger_balance, l.chain_balance, null,
           'no longer in the configuration: not proven any more', ${JSON.stringify({ retired: true })}::jsonb
    from (
      select distinct on (chain_id, token, wallet, role)
        chain_id, token, symbol, wallet, role, block_number, ledger_balance, chain_balance, details
      from balance_proofs
      where ${chainId === undefined ? sql`true` : sql`chain_id = ${chainId}::bigint`}
      order by chain_id, token, wallet, role, proved_at desc, id desc
    ) l
    where not coalesce((l.details->>'retired')::boolean, false) and not ${keep}`);
}

/** The ledger and chain side of one address and token, proven once for every role it holds. */
async function proveAddress(
  deps: ProofDeps,
  target: AddressToProve,
  token: { chainId: number; address: `0x${string}`; symbol: string; decimals: number },
): Promise<BalanceProof[]> {
  const codes: string[] = [];
  for (const [role, storeIds] of target.roles) {
    const kind: AccountKind = role === 'merchant' ? 'assets:wallet' : 'assets:custody';
    for (const s of storeIds) codes.push(accountCode(account(kind, s, token)));
  }
  const custodyStores = target.roles.get('custody') ?? [];
  const snapshot = await deps.db.transaction(
    async (tx) => {
      const cursor = (
        await tx.execute<{ block: string | null }>(sql`
          select least(finalized_block, block_number)::text as block from chain_cursors where chain_id = ${target.chainId}`)
      ).rows[0];
      const block = cursor?.block ? BigInt(cursor.block) : null;
      const ids = await tx.execute<{ id: string }>(sql`
        select id::text from ledger_accounts where code in (${sql.join(
          codes.map((c) => sql`${c}`),
          sql`, `,
        )})`);
      let ledger = 0n;
      for (const { id } of ids.rows) ledger += await accountBalance(tx, BigInt(id));
      if (block === null) return { block, waiting: null, ledger, payouts: [] as CustodyPayout[] };
      const waiting = await waitingTransfers(tx, target, token, block);
      const payouts =
        custodyStores.length > 0 ? await payoutsNotBooked(tx, target, custodyStores, token, block) : [];
      return { block, waiting, ledger, payouts };
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
  const windowMs = deps.config.recon?.inTransitWindowMs ?? DEFAULT_IN_FLIGHT_WINDOW_MS;
  const { inFlightPayouts, notAddedBack } = judgeInFlight(
    snapshot.payouts,
    token.decimals,
    snapshot.block,
    (deps.clock ?? systemClock).now(),
    windowMs,
  );
  const inFlight = inFlightPayouts.reduce((sum, p) => sum + p.amount, 0n);
  const notes = [
    inFlightPayouts.length === 0
      ? ''
      : `${inFlightPayouts.length} payout(s) booked out of custody whose funding is in flight, not on chain at or below block ${snapshot.block} (added back): ${inFlightPayouts
          .slice(0, 5)
          .map((p) => p.id)
          .join(', ')}${inFlightPayouts.length > 5 ? ', ...' : ''}`,
    notAddedBack.length === 0
      ? ''
      : `${notAddedBack.length} payout(s) booked out of custody whose funding is not in flight (not added back): ${notAddedBack
          .slice(0, 5)
          .map((n) => `${n.payoutId}: ${n.reason}`)
          .join('; ')}${notAddedBack.length > 5 ? '; ...' : ''}`,
  ].filter((n) => n !== '');
  const note = notes.length === 0 ? null : notes.join('. ');
  const proofs = (result: {
    ledgerBalance: bigint;
    chainBalance: bigint | null;
    ok: boolean | null;
    error: string | null;
    inFlight: bigint;
    note: string | null;
    notAddedBack: NotAddedBack[];
  }): BalanceProof[] =>
    [...target.roles].map(([role, storeIds]) => ({
      chainId: target.chainId,
      symbol: token.symbol,
      token: token.address,
      decimals: token.decimals,
      wallet: target.wallet,
      role,
      storeIds,
      blockNumber: snapshot.block,
      ...result,
    }));
  const failed = (error: string, chainBalance: bigint | null = null): BalanceProof[] =>
    proofs({
      ledgerBalance: snapshot.ledger,
      chainBalance,
      ok: null,
      error,
      inFlight: 0n,
      note: null,
      notAddedBack: [],
    });
  if (snapshot.block === null)
    return failed('the chain has not been indexed yet: no finalized block to prove at');
  const w = snapshot.waiting;
  if (w && w.total > 0) {
    const parts = [
      w.unbooked > 0
        ? `${w.unbooked} transfer(s) up to block ${snapshot.block} not yet final or not matched yet`
        : '',
      w.ahead > 0 ? `${w.ahead} booked transfer(s) above block ${snapshot.block}` : '',
      w.orphaned > 0 ? `${w.orphaned} booked transfer(s) of replaced blocks not unwound yet` : '',
    ].filter((s) => s !== '');
    return failed(`waiting: ${parts.join('; ')}`);
  }
  const rpc = deps.rpcs.get(target.chainId);
  if (!rpc) return failed(`no RPC URL for chain ${target.chainId}`);
  let chainBalance: bigint;
  try {
    chainBalance = await rpc.client.readContract({
      address: token.address,
      abi: BALANCE_OF_ABI,
      functionName: 'balanceOf',
      args: [target.wallet as `0x${string}`],
      blockNumber: snapshot.block,
    });
  } catch (err) {
    return failed(`balanceOf could not be read: ${(err as Error).message.split('\n')[0]}`);
  }
  const ledgerBalance = snapshot.ledger + inFlight;
  return proofs({
    ledgerBalance,
    chainBalance,
    ok: chainBalance === ledgerBalance,
    error: null,
    inFlight,
    note,
    notAddedBack,
  });
}

interface Waiting {
  total: number;
  /** At or below the block: pending, or final and not booked yet. */
  unbooked: number;
  /** Booked, in a block above the proof block. */
  ahead: number;
  /** Booked, orphaned by a reorg, not unwound yet. */
  orphaned: number;
}

/** The wallet's transfers that keep the books and the chain at `block` from being comparable yet. */
async function waitingTransfers(
  tx: DbExecutor,
  target: AddressToProve,
  token: { address: string },
  block: bigint,
): Promise<Waiting> {
  const b = block.toString();
  const { rows } = await tx.execute<{ unbooked: string; ahead: string; orphaned: string }>(sql`
    select
      count(*) filter (where state in ('pending', 'final') and applied_at is null and block_number <= ${b}::bigint)::text as unbooked,
      count(*) filter (where state = 'final' and matched_as is not null and block_number > ${b}::bigint)::text as ahead,
      count(*) filter (where state = 'orphaned' and matched_as is not null and unwound_at is null)::text as orphaned
    from chain_transfers
    where chain_id = ${target.chainId} and token = ${token.address.toLowerCase()}
      and (from_address = ${target.wallet} or to_address = ${target.wallet})
      and ((state in ('pending', 'final') and applied_at is null and block_number <= ${b}::bigint)
        or (state = 'final' and matched_as is not null and block_number > ${b}::bigint)
        or (state = 'orphaned' and matched_as is not null and unwound_at is null))`);
  const r = rows[0];
  const unbooked = Number(r?.unbooked ?? 0);
  const ahead = Number(r?.ahead ?? 0);
  const orphaned = Number(r?.orphaned ?? 0);
  return { total: unbooked + ahead + orphaned, unbooked, ahead, orphaned };
}

/** A created payout of the custody's stores whose funding is not booked as its funding at or below the block. */
type CustodyPayout = {
  id: string;
  amount: string;
  funding_tx_hash: string | null;
  /** When rule 5 credited custody (funded_at; created_at when unset). */
  since: Date | string;
  /** A log of its funding transaction out of this wallet is final at or below the block. */
  final_at_block: boolean;
  /** What those final logs were booked as (null: not booked yet, the proof waits anyway). */
  booked_as: string | null;
  /** A log of its funding transaction out of this wallet is stored (pending or final) above the block. */
  above_block: boolean;
};

/**
 * Created payouts of the custody's stores in this token (rule 5 booked their amount out of
 * custody) whose funding is not final and booked as this link's funding at or below `block`
 * (a booked funding row carries the payout's funding_tx_hash, set by the matcher, and the link),
 * with what the chain shows of their funding transaction out of this wallet.
 */
async function payoutsNotBooked(
  tx: DbExecutor,
  target: AddressToProve,
  storeIds: string[],
  token: { address: string },
  block: bigint,
): Promise<CustodyPayout[]> {
  const b = block.toString();
  const { rows } = await tx.execute<CustodyPayout>(sql`
    select p.id, p.amount, p.funding_tx_hash, coalesce(p.funded_at, p.created_at) as since,
           coalesce(f.final_at_block, false) as final_at_block, f.booked_as,
           coalesce(f.above_block, false) as above_block
    from payouts p
    left join lateral (
      select
        bool_or(t.state = 'final' and t.applied_at is not null and t.block_number <= ${b}::bigint
                and t.matched_ref = p.claim_link_id and t.matched_as like '%claim_link_funding%') as booked_as_funding,
        bool_or(t.state = 'final' and t.block_number <= ${b}::bigint) as final_at_block,
        string_agg(distinct t.matched_as, ',') filter (where t.state = 'final' and t.block_number <= ${b}::bigint) as booked_as,
        bool_or(t.state in ('pending', 'final') and t.block_number > ${b}::bigint) as above_block
      from chain_transfers t
      where p.funding_tx_hash is not null and t.chain_id = p.chain_id and t.tx_hash = lower(p.funding_tx_hash)
        and t.from_address = ${target.wallet} and t.token = ${token.address.toLowerCase()}
    ) f on true
    where p.chain_id = ${target.chainId} and lower(p.token_address) = ${token.address.toLowerCase()}
      and p.store_id in (${sql.join(
        storeIds.map((s) => sql`${s}`),
        sql`, `,
      )})
      and p.create_outcome = 'created' and p.claim_link_id is not null
      and not coalesce(f.booked_as_funding, false)
    order by p.created_at, p.id`);
  return rows;
}

/**
 * Which of those payouts are in flight at `block` (added back) and which are not, and why (see
 * the proof's comment above): a funding final at or below the block and booked otherwise is
 * never in flight; one stored above the block always is; one not on chain is for `windowMs`
 * after rule 5.
 */
function judgeInFlight(
  payouts: CustodyPayout[],
  decimals: number,
  block: bigint | null,
  now: Date,
  windowMs: number,
): { inFlightPayouts: Array<{ id: string; amount: bigint }>; notAddedBack: NotAddedBack[] } {
  const inFlightPayouts: Array<{ id: string; amount: bigint }> = [];
  const notAddedBack: NotAddedBack[] = [];
  const minutes = Math.round(windowMs / 60_000);
  for (const p of payouts) {
    const amount = parseDecimalAmount(p.amount, decimals);
    const since = new Date(p.since);
    if (p.final_at_block) {
      // Not booked yet: the proof waits for the matcher anyway; counted as in flight meanwhile.
      if (p.booked_as === null) {
        inFlightPayouts.push({ id: p.id, amount });
        continue;
      }
      notAddedBack.push({
        payoutId: p.id,
        amount,
        reason: `its funding transaction ${p.funding_tx_hash} is final at or below block ${block} and booked as ${p.booked_as}, not as its link's funding: custody is credited twice (rule 5 and that booking)`,
      });
    } else if (p.above_block || now.getTime() - since.getTime() <= windowMs) {
      inFlightPayouts.push({ id: p.id, amount });
    } else {
      notAddedBack.push({
        payoutId: p.id,
        amount,
        reason: `rule 5 booked it out of custody at ${since.toISOString()}, but its funding (${p.funding_tx_hash ? `transaction ${p.funding_tx_hash}` : 'no funding hash known'}) is not on chain at or below block ${block} after ${minutes} minutes`,
      });
    }
  }
  return { inFlightPayouts, notAddedBack };
}

/**
 * Publishes proofs as the balance-proof gauges (1 equal, 0 differs, -1 could not be proven), from
 * the periodic prove job and from every reconciliation run, so the dashboard and the
 * BalanceProofFailed alert follow the latest proof, whoever made it. A series is a chain, token
 * and wallet role, which several stores' wallets can share: it shows the worst of them (a
 * difference before an unproven wallet before a proven one), and the largest drift.
 */
export function recordProofMetrics(
  metrics: Pick<Metrics, 'balanceProofOk' | 'balanceProofDrift'>,
  proofs: BalanceProof[],
): void {
  const series = new Map<string, { labels: Record<string, string>; ok: number; drift: number | null }>();
  for (const p of proofs) {
    const labels = { chain_id: String(p.chainId), token: p.symbol, role: p.role };
    const key = `${labels.chain_id} ${labels.token} ${labels.role}`;
    const ok = p.ok === null ? -1 : p.ok ? 1 : 0;
    // Display only (a float): the exact drift is in balance_proofs and the report.
    const drift =
      p.chainBalance === null ? null : Number(p.ledgerBalance - p.chainBalance) / 10 ** p.decimals;
    const seen = series.get(key);
    const worse = (a: number, b: number) => (a === 0 || b === 0 ? 0 : Math.min(a, b));
    series.set(key, {
      labels,
      ok: seen ? worse(seen.ok, ok) : ok,
      drift:
        seen?.drift != null && (drift === null || Math.abs(seen.drift) >= Math.abs(drift))
          ? seen.drift
          : drift,
    });
  }
  for (const { labels, ok, drift } of series.values()) {
    metrics.balanceProofOk.set(labels, ok);
    if (drift !== null) metrics.balanceProofDrift.set(labels, drift);
  }
}
