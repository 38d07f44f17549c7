import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { crashingDb, isConnectionLoss, SimulatedCrash } from '../../sim/crashingDb.ts';
import { ALL_FAULTS, scheduleEvents } from '../../sim/schedule.ts';
import { parseShapes } from '../../sim/shapes.ts';
import { generateWorld } from '../../sim/world.ts';
import { createDatabase, type Database } from '../../src/db/database.ts';
import { createTestDatabase } from '../helpers/testDatabase.ts';

/**
 * The conn_loss fault: at a crash's statement PostgreSQL terminates the job's connection (a
 * restart, a failover) and the process lives on. Before the pool gave every connection an error
 * listener, the first such world crashed the simulator with pg's "Connection terminated
 * unexpectedly".
 */
describe('conn_loss', () => {
  let database: Database | undefined;
  afterAll(async () => {
    await database?.close();
  });

  it('behavior: the statement after the k-th finds its transaction’s connection terminated; later statements run', async () => {
    database = createDatabase(await createTestDatabase('sim_conn_loss'), { max: 2 });
    const db = crashingDb(database.db, 1, { connLoss: true });
    const pids = new Set<number>();
    const pid = async (on: Pick<typeof db, 'execute'>) => {
      const { rows } = await on.execute<{ pid: number }>(sql`select pg_backend_pid() as pid`);
      pids.add(Number(rows[0]?.pid));
    };
    const failed = await db
      .transaction(async (tx) => {
        await pid(tx);
        await pid(tx);
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(failed).not.toBeInstanceOf(SimulatedCrash);
    expect(isConnectionLoss(failed), String(failed)).toBe(true);
    expect(pids.size).toBe(1);
    // The process is alive and the pool makes a new connection: no crash after the loss.
    await pid(db);
    await pid(db);
    expect(pids.size).toBe(2);
  });

  it('behavior: with every fault on, seeds 1-120 lose connections at about half their crashes, and none without the fault', () => {
    let lost = 0;
    let crashes = 0;
    for (let i = 1; i <= 120; i++) {
      const seed = String(i);
      const world = generateWorld(seed, { intents: 8, contradict: true, shapes: parseShapes('all') });
      const all = scheduleEvents(world, seed, { faults: new Set(ALL_FAULTS), maxEvents: 300 });
      const without = scheduleEvents(world, seed, {
        faults: new Set(ALL_FAULTS.filter((f) => f !== 'conn_loss')),
        maxEvents: 300,
      });
      const strip = (e: object) => {
        const { connLoss: _connLoss, ...rest } = e as { connLoss?: true };
        return rest;
      };
      // The fault only changes what kind of crash a crash is: the events are otherwise the same.
      expect(all.map(strip)).toEqual(without);
      lost += all.filter((e) => (e as { connLoss?: true }).connLoss).length;
      crashes += all.filter((e) => (e as { crash?: number }).crash !== undefined).length;
    }
    expect(lost).toBeGreaterThan(crashes * 0.35);
    expect(lost).toBeLessThan(crashes * 0.65);
  });
});
