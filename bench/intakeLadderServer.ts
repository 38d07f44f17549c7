/**
 * The intake's work one step at a time, for bench/intake.ts's ladder: the daemon's own HTTP
 * server and intake route (src/daemon/httpServer.ts, src/intake), with the steps after a given
 * one left out. LADDER_STEP:
 * - verify: signature, timestamp and JSON checks, then 200 (no nonce claim, nothing stored);
 * - store: and the group-committed nonce claim and inbox row (src/intake/inboxWriter.ts), then
 *   200 without enqueuing a job.
 * The full intake (enqueue included) is the daemon itself. Not a way to run stablebooks: a
 * diagnostic of where the intake's CPU goes. Env: LADDER_STEP, DATABASE_URL (store), API_KEY,
 * API_SECRET, PORT.
 */
import pino from 'pino';
import { systemClock } from '../src/clock.ts';
import { defaultHttpLimits } from '../src/config/loadConfig.ts';
import { createPublicServer } from '../src/daemon/httpServer.ts';
import { createDatabase } from '../src/db/database.ts';
import { createInboxWriter, type InboxWriter } from '../src/intake/inboxWriter.ts';
import { registerIntakeRoutes } from '../src/intake/intakeRoutes.ts';
import { createMetrics } from '../src/metrics/metrics.ts';

const step = process.env.LADDER_STEP;
if (step !== 'verify' && step !== 'store') throw new Error('LADDER_STEP must be verify or store');
const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const metrics = createMetrics();
const app = createPublicServer({ metrics, limits: defaultHttpLimits });
let inbox: Pick<InboxWriter, 'store' | 'waiting'> = { store: async () => 'stored', waiting: () => 0 };
if (step === 'store') {
  const database = createDatabase(need('DATABASE_URL'));
  inbox = createInboxWriter({
    db: database.db,
    logger: pino({ level: 'warn' }),
    enqueueMany: async () => {},
  });
}
const apiKey = need('API_KEY');
registerIntakeRoutes(app, {
  clock: systemClock,
  storesByKey: new Map([
    [
      apiKey,
      {
        storeId: 'st_a',
        businessId: 'biz_1',
        apiKey,
        apiSecret: need('API_SECRET'),
        signedResponse: false,
        functionalCurrency: 'USD',
        par: new Map(),
        wallets: new Map(),
      },
    ],
  ]),
  metrics,
  inbox,
  queueLimit: 5_000,
});
await app.listen({ host: '127.0.0.1', port: Number(need('PORT')) });
console.log('ready');
