/**
 * The cost of the entries' hash chain to posting (issue 32: at most 10% of posting throughput),
 * and how fast the chain is built and recomputed. Used by bench/ledger.ts.
 *
 * Three variants in alternating rounds (each round starting with the next variant), since this
 * shared machine's runs differ by ~20% from one minute to the next and a 10% effect needs them
 * side by side:
 * - before: the schema before migration 0017 (no ledger_entries tx_id index), no sealer;
 * - the index only (what every posting pays from migration 0017 on);
 * - the index and the sealer running every `everyMs` (the daemon seals every 5 s).
 */
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { createDatabase, type Db } from '../src/db/database.ts';
import { sealLedger } from '../src/ledger/sealLedger.ts';
import { verifyLedgerChain } from '../src/ledger/verifyLedgerChain.ts';
import { fmt, log, sleep } from './benchKit.ts';

export interface SealingRound {
  variant: 'before' | 'index' | 'sealer';
  round: number;
  entriesPerSecond: number;
  /** Entries the sealer sealed while the posters ran (sealer variant only). */
  sealed: number;
}

const INDEX = sql.raw('ledger_entries_tx_idx');

/** Seals until nothing is left: the daemon's steady state, in which each run seals the last seconds only. */
async function sealAll(db: Db): Promise<number> {
  let total = 0;
  for (;;) {
    const run = await sealLedger(db);
    total += run.sealed;
    if (run.ran && run.sealed === 0) return total;
  }
}

export async function sealingImpact(
  url: string,
  statsDb: Db,
  post: () => Promise<number>,
  options: { rounds: number; everyMs: number },
): Promise<SealingRound[]> {
  const sealerDb = createDatabase(url, { max: 1, applicationName: 'stablebooks-bench-sealer' });
  const rounds: SealingRound[] = [];
  try {
    for (let round = 1; round <= options.rounds; round++) {
      // Each round starts with another variant: the machine's load drifts within a round too.
      const order = (['before', 'index', 'sealer'] as const).map(
        (_, i, all) => all[(i + round - 1) % all.length]!,
      );
      for (const variant of order) {
        if (variant === 'before') await statsDb.execute(sql`drop index if exists ${INDEX}`);
        else await statsDb.execute(sql`create index if not exists ${INDEX} on ledger_entries (tx_id)`);
        if (variant !== 'before') await sealAll(sealerDb.db);
        log(`sealing round ${round}, ${variant}`);
        let sealing = variant === 'sealer';
        let sealed = 0;
        const sealer = (async () => {
          while (sealing) {
            const t0 = performance.now();
            sealed += (await sealLedger(sealerDb.db)).sealed;
            await sleep(Math.max(0, options.everyMs - (performance.now() - t0)));
          }
        })();
        let entriesPerSecond: number;
        try {
          entriesPerSecond = await post();
        } finally {
          sealing = false;
          await sealer;
        }
        rounds.push({ variant, round, entriesPerSecond, sealed });
        log(
          `sealing round ${round}, ${variant}: ${fmt(entriesPerSecond)} entries/s, ${fmt(sealed)} sealed meanwhile`,
        );
      }
    }
    await statsDb.execute(sql`create index if not exists ${INDEX} on ledger_entries (tx_id)`);
    await sealAll(sealerDb.db);
  } finally {
    await sealerDb.close();
  }
  return rounds;
}

export interface ChainRates {
  sealed: number;
  sealSeconds: number;
  verified: number;
  verifySeconds: number;
}

/** Seals every entry not sealed yet (the bulk load's), then recomputes the whole chain once. */
export async function chainRates(url: string): Promise<ChainRates> {
  const database = createDatabase(url, { max: 1, applicationName: 'stablebooks-bench-chain' });
  try {
    let t0 = performance.now();
    const sealed = await sealAll(database.db);
    const sealSeconds = (performance.now() - t0) / 1000;
    log(`sealed ${fmt(sealed)} entries in ${sealSeconds.toFixed(1)} s`);
    t0 = performance.now();
    const v = await database.db.transaction(
      (tx) =>
        verifyLedgerChain(tx, {
          onProgress: (done, total) => {
            if (done % 100_000 < 2_000) log(`  verify: ${fmt(done)} of ${fmt(total)} seals`);
          },
        }),
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
    const verifySeconds = (performance.now() - t0) / 1000;
    if (!v.ok) throw new Error(`the bench's chain does not verify: ${v.broken?.reason}`);
    log(`verified ${fmt(v.verified)} seals in ${verifySeconds.toFixed(1)} s`);
    return { sealed, sealSeconds, verified: v.verified, verifySeconds };
  } finally {
    await database.close();
  }
}
