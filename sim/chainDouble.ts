import { createHash } from 'node:crypto';
import { createPublicClient, custom, type Hex, numberToHex, type PublicClient } from 'viem';
import type { ChainRpc } from '../src/chain/rpcClients.ts';
import { addressTopic, TRANSFER_TOPIC } from '../src/chain/transferLog.ts';

/**
 * A deterministic chain behind the JSON-RPC interface the indexer reads (eth_getBlockByNumber,
 * eth_getLogs, eth_chainId), so the simulator drives the product's own indexer code path with
 * no node, no wall time and no randomness of its own: blocks, reorgs and the faults of a node
 * (an eth_getLogs answer missing a log) happen when the world says so.
 *
 * Glossary
 * - transfer: one ERC-20 Transfer log, the only kind of log this chain has;
 * - pending: transfers sent and not yet in a block (a reorg puts the dropped ones back here);
 * - fork: a counter in every block hash, so a block replaced by a reorg has a new hash.
 */
export interface SimTransfer {
  /** The token contract, lowercase. */
  token: Hex;
  from: Hex;
  to: Hex;
  value: bigint;
  txHash: Hex;
}

interface Block {
  number: bigint;
  hash: Hex;
  timestamp: bigint;
  transfers: SimTransfer[];
}

export interface ChainDouble {
  chainId: number;
  /** Sends a transfer: it is in the next block mined. */
  send(transfer: SimTransfer): void;
  /** Mines one block at `time` (seconds) with every pending transfer. */
  mine(time: bigint): void;
  /**
   * Replaces the last `depth` blocks by others (new hashes) holding the same transfers, but for
   * what `change` says: its target's block is replaced too (the reorg reaches down to it, at most
   * REORG_REACH blocks), and the target is dropped, mined again later or at another log index, or
   * replaced. Returns what was replaced, or null when no block was.
   */
  reorg(depth: number, change?: ReorgChange): ReorgRecord | null;
  head(): bigint;
  /** What balanceOf(wallet) answers at the head, or at `block`. */
  balanceOf(token: string, wallet: string, block?: bigint): bigint;
  /** The canonical block of a transaction, if it is in one. */
  blockOf(txHash: string): bigint | undefined;
  /** The next eth_getLogs answer with a log of a block not yet final leaves that log out. */
  dropNextLog(): void;
  /** The product's view: a ChainRpc over this chain. */
  rpc(): ChainRpc;
}

/**
 * What a reorg changes besides the block hashes (sim/shapes.ts: reorg_drop, reorg_remine,
 * reorg_replace, reorg_deep):
 * - none: the target's block is replaced with the same transfers (the reorg only reaches it);
 * - drop: the target leaves the chain and is never mined again;
 * - remine_later: the target goes back to the pending transfers, mined in the next block;
 * - remine_index: the target stays at its height at another log index (moved within its block,
 *   or behind `filler`, a transfer no watched wallet is party to, when it is alone);
 * - replace: `replacement`, another transaction, takes its place at the same height and index.
 */
export interface ReorgChange {
  kind: 'none' | 'drop' | 'remine_later' | 'remine_index' | 'replace';
  target: Hex;
  replacement?: SimTransfer;
  filler?: SimTransfer;
}

/** The blocks a reorg replaced, as they were, and the head then: the oracle's ground truth. */
export interface ReorgRecord {
  head: bigint;
  replaced: Array<{ number: bigint; transfers: readonly SimTransfer[] }>;
}

/** How deep a reorg reaches for its target at most: within the simulator's reorg window (80). */
export const REORG_REACH = 64;

/** `unsafeDepth`: how many blocks below the head are not final yet (the registry's finality depth). */
export function createChainDouble(chainId: number, unsafeDepth: number): ChainDouble {
  const blocks: Block[] = [{ number: 0n, hash: blockHash(0n, 0), timestamp: 1_700_000_000n, transfers: [] }];
  let pending: SimTransfer[] = [];
  let fork = 0;
  let dropLog = false;

  const at = (n: bigint): Block | undefined => blocks[Number(n)];
  const headBlock = (): Block => blocks[blocks.length - 1] as Block;

  const header = (b: Block | undefined) =>
    b ? { number: numberToHex(b.number), hash: b.hash, timestamp: numberToHex(b.timestamp) } : null;

  const logsOf = (b: Block) =>
    b.transfers.map((t, i) => ({
      address: t.token,
      topics: [TRANSFER_TOPIC, addressTopic(t.from), addressTopic(t.to)],
      data: `0x${t.value.toString(16).padStart(64, '0')}` as Hex,
      blockNumber: numberToHex(b.number),
      blockHash: b.hash,
      blockTimestamp: numberToHex(b.timestamp),
      transactionHash: t.txHash,
      transactionIndex: numberToHex(i),
      logIndex: numberToHex(i),
      removed: false,
    }));

  function balanceAt(token: string, wallet: string, block?: bigint): bigint {
    const w = wallet.toLowerCase();
    const tk = token.toLowerCase();
    let balance = 0n;
    for (const b of blocks) {
      if (block !== undefined && b.number > block) break;
      for (const t of b.transfers) {
        if (t.token !== tk) continue;
        if (t.to === w) balance += t.value;
        if (t.from === w) balance -= t.value;
      }
    }
    return balance;
  }

  const request = async ({ method, params }: { method: string; params?: unknown }): Promise<unknown> => {
    const args = (params ?? []) as unknown[];
    switch (method) {
      case 'eth_chainId':
        return numberToHex(chainId);
      case 'eth_blockNumber':
        return numberToHex(headBlock().number);
      case 'eth_getBlockByNumber': {
        const tag = args[0] as string;
        if (tag === 'latest') return header(headBlock());
        // What a node says is final: `unsafeDepth` below the head.
        if (tag === 'safe' || tag === 'finalized') {
          const n = headBlock().number - BigInt(unsafeDepth);
          return header(at(n > 0n ? n : 0n));
        }
        return header(at(BigInt(tag)));
      }
      case 'eth_getLogs': {
        const filter = args[0] as {
          address: Hex[];
          topics: (Hex | Hex[] | null)[];
          fromBlock: Hex;
          toBlock: Hex;
        };
        const contracts = new Set(filter.address.map((a) => a.toLowerCase()));
        const fromTopics = filter.topics[1] ? new Set(filter.topics[1] as Hex[]) : null;
        const toTopics = filter.topics[2] ? new Set(filter.topics[2] as Hex[]) : null;
        const out = [];
        for (let n = BigInt(filter.fromBlock); n <= BigInt(filter.toBlock); n++) {
          const b = at(n);
          if (!b) break;
          for (const log of logsOf(b)) {
            if (!contracts.has(log.address)) continue;
            if (fromTopics && !fromTopics.has(log.topics[1] as Hex)) continue;
            if (toTopics && !toTopics.has(log.topics[2] as Hex)) continue;
            out.push(log);
          }
        }
        // A lagging node leaves out a log of the blocks it has just seen, not of final ones: the
        // threat the indexer's re-read at finality answers (docs/decisions.md).
        const recent = out.findIndex(
          (log) => BigInt(log.blockNumber) > headBlock().number - BigInt(unsafeDepth),
        );
        if (dropLog && recent >= 0) {
          dropLog = false;
          out.splice(recent, 1);
        }
        return out;
      }
      case 'eth_call': {
        // balanceOf(address) at a block (the balance proofs' readContract): the only call a
        // token here answers.
        const [call, tag] = args as [{ to: Hex; data: Hex }, string | undefined];
        if (!call.data.startsWith(BALANCE_OF))
          throw new Error(`chain double: eth_call ${call.data.slice(0, 10)}`);
        const wallet = `0x${call.data.slice(-40)}`;
        const block = tag === undefined || !tag.startsWith('0x') ? undefined : BigInt(tag);
        const balance = balanceAt(call.to, wallet, block);
        // A world may send more than a wallet holds (no generator funds every wallet first); no
        // uint256 can say so, and a real node never has to: an error, as an unreadable balance.
        // -32000, as a node answers a call that cannot be made: viem does not retry it.
        if (balance < 0n)
          throw Object.assign(new Error(`chain double: ${wallet} holds less than zero at this block`), {
            code: -32000,
          });
        return `0x${balance.toString(16).padStart(64, '0')}`;
      }
      case 'eth_getTransactionReceipt': {
        // A transaction of this chain succeeded once it is in a canonical block; its logs are
        // its transfers there (the single-hash verification's read).
        const hash = (args[0] as string).toLowerCase();
        const b = blocks.find((x) => x.transfers.some((t) => t.txHash === hash));
        if (!b) return null;
        const logs = logsOf(b).filter((log) => log.transactionHash === hash);
        return {
          transactionHash: hash,
          transactionIndex: logs[0]?.transactionIndex ?? '0x0',
          blockHash: b.hash,
          blockNumber: numberToHex(b.number),
          status: '0x1',
          logs,
        };
      }
      default:
        throw new Error(`chain double: ${method} is not implemented`);
    }
  };

  const client = createPublicClient({ transport: custom({ request }) }) as PublicClient;
  return {
    chainId,
    send: (t) => pending.push(t),
    mine(time) {
      const parent = headBlock();
      const number = parent.number + 1n;
      const timestamp = time > parent.timestamp ? time : parent.timestamp + 1n;
      blocks.push({ number, hash: blockHash(number, fork), timestamp, transfers: pending });
      pending = [];
    },
    reorg(depth, change) {
      // As a real reorg: the last blocks are replaced at once by as many others (new hashes, the
      // same times), each including again what the block it replaces held: a transfer is never
      // in a block older than the one it was first sent into. A change reaches down to its
      // target's block and changes what that one holds.
      const target = change?.target.toLowerCase();
      const at =
        target === undefined ? -1 : blocks.findIndex((b) => b.transfers.some((t) => t.txHash === target));
      const reach = at > 0 && blocks.length - at <= REORG_REACH ? blocks.length - at : 0;
      const keep = Math.max(1, blocks.length - Math.max(depth, reach));
      const head = headBlock().number;
      const dropped = blocks.splice(keep);
      fork++;
      for (const old of dropped) {
        const transfers = [...old.transfers];
        const i = transfers.findIndex((t) => t.txHash === target);
        if (change && i >= 0) {
          const [moved] = transfers.splice(i, 1) as [SimTransfer];
          if (change.kind === 'none') transfers.splice(i, 0, moved);
          else if (change.kind === 'remine_later') pending.unshift(moved);
          else if (change.kind === 'replace' && change.replacement)
            transfers.splice(i, 0, change.replacement);
          else if (change.kind === 'remine_index') {
            if (transfers.length === 0 && change.filler) transfers.push(change.filler, moved);
            else transfers.splice(i === transfers.length ? 0 : transfers.length, 0, moved);
          }
        }
        blocks.push({ ...old, hash: blockHash(old.number, fork), transfers });
      }
      if (dropped.length === 0) return null;
      return { head, replaced: dropped.map((b) => ({ number: b.number, transfers: b.transfers })) };
    },
    head: () => headBlock().number,
    balanceOf: (token, wallet, block) => balanceAt(token, wallet, block),
    blockOf(txHash) {
      const h = txHash.toLowerCase();
      return blocks.find((b) => b.transfers.some((t) => t.txHash === h))?.number;
    },
    dropNextLog: () => {
      dropLog = true;
    },
    rpc: () => ({ chainId, client, perUrl: [client], urls: ['sim://chain'], hosts: ['sim'] }),
  };
}

/** balanceOf(address)'s selector. */
const BALANCE_OF = '0x70a08231';

function blockHash(number: bigint, fork: number): Hex {
  return `0x${createHash('sha256').update(`block:${number}:${fork}`).digest('hex')}`;
}
