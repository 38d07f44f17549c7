import pg from 'pg';
import { createDatabase } from '../src/db/database.ts';
import { runMigrations } from '../src/db/migrate.ts';
import { ensureLoginRole, type LoginRole, urlAsRole } from '../src/devservices/loginRole.ts';
import { startEphemeralPostgres } from '../src/devservices/postgres.ts';
import { runWorld } from './runWorld.ts';
import { ALL_FAULTS, FAULTS, type Fault, type SimEvent, scheduleEvents } from './schedule.ts';
import { ALL_SHAPES, PENDING_SHAPES, parseShapes, SHAPES, type Shape } from './shapes.ts';
import { shrinkEvents } from './shrink.ts';
import { generateWorld } from './world.ts';

/**
 * `npm run sim -- [--seeds N | --seed S] [--from K] [--events K] [--intents K] [--faults LIST|all|none|list]
 * [--shapes LIST|default|all|none|list] [--only I,J,...]`: plays seeded worlds to the product and judges each against the oracle. One
 * line per failing seed (with a shrunk event list and the command that replays it), then
 * `N passed, M failed`. The same arguments give the same worlds, events and results.
 */
interface Options {
  seeds: string[];
  events: number;
  intents: number;
  faults: Set<Fault>;
  shapes: Set<Shape>;
  only?: number[];
  shrink: boolean;
  /** Every problem of a failing seed, not just the first. */
  verbose: boolean;
  /** Stop after this many failing seeds (each shrunk). */
  maxFailures: number;
}

function parse(argv: string[]): Options {
  const args = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const next = argv[i + 1];
    if (next === undefined || next.startsWith('--')) args.set(a, 'true');
    else {
      args.set(a, next);
      i++;
    }
  }
  const known = [
    '--seeds',
    '--seed',
    '--from',
    '--events',
    '--intents',
    '--faults',
    '--shapes',
    '--only',
    '--no-shrink',
    '--verbose',
    '--max-failures',
  ];
  for (const k of args.keys())
    if (!known.includes(k)) throw new Error(`unknown option ${k} (known: ${known.join(' ')})`);
  const whole = (name: string, fallback: number) => {
    const v = args.get(name);
    if (v === undefined) return fallback;
    if (!/^\d+$/.test(v)) throw new Error(`${name}: ${v} is not a whole number`);
    return Number(v);
  };
  const from = whole('--from', 1);
  const seed = args.get('--seed');
  const seeds =
    seed !== undefined ? [seed] : Array.from({ length: whole('--seeds', 100) }, (_, i) => String(from + i));
  const faultList = args.get('--faults') ?? 'all';
  const faults = new Set<Fault>(
    faultList === 'all' ? ALL_FAULTS : faultList === 'none' ? [] : (faultList.split(',') as Fault[]),
  );
  for (const f of faults)
    if (!ALL_FAULTS.includes(f))
      throw new Error(`--faults: unknown fault ${f} (known: ${ALL_FAULTS.join(',')})`);
  const only = args.get('--only');
  const shapes = parseShapes(args.get('--shapes') ?? 'default');
  return {
    seeds,
    events: whole('--events', 300),
    intents: whole('--intents', 8),
    faults,
    shapes,
    only: only === undefined ? undefined : only.split(',').map(Number),
    shrink: !args.has('--no-shrink') && only === undefined,
    verbose: args.has('--verbose'),
    maxFailures: whole('--max-failures', Number.MAX_SAFE_INTEGER),
  };
}

/** The role each run's daemon code connects as; a database made from the template keeps its grants. */
const SIM_RUNTIME_ROLE: LoginRole = { name: 'stablebooks_sim_runtime', password: 'stablebooks-sim-runtime' };

async function main(): Promise<number> {
  if (process.argv.slice(2).join(' ').includes('--shapes list')) {
    for (const name of ALL_SHAPES)
      console.log(
        `${name.padEnd(24)} ${PENDING_SHAPES.includes(name) ? '(not in the default mix yet) ' : ''}${SHAPES[name]}`,
      );
    return 0;
  }
  if (process.argv.slice(2).join(' ').includes('--faults list')) {
    for (const name of ALL_FAULTS) console.log(`${name.padEnd(24)} ${FAULTS[name]}`);
    return 0;
  }
  const options = parse(process.argv.slice(2));
  const worldOptions = {
    intents: options.intents,
    contradict: options.faults.has('contradict'),
    shapes: options.shapes,
  };
  const { adminUrl, stop } = await postgres();
  const template = `sim_template_${process.pid}`;
  await admin(adminUrl, `create database ${template}`);
  // The daemon's code runs as its role, as in production (README, "Two database roles").
  await ensureLoginRole(adminUrl, SIM_RUNTIME_ROLE);
  await runMigrations(dbUrl(adminUrl, template), { runtimeRole: SIM_RUNTIME_ROLE.name });
  // No autovacuum in the worlds' tables (the copies keep the template's setting): its runs come
  // when the server's schedule says, and an ANALYZE between two statements changes plans and the
  // order of rows a query does not sort, so a seed played later in a batch would differ from the
  // same seed played alone.
  await admin(
    dbUrl(adminUrl, template),
    `do $$ declare t text; begin
       for t in select quote_ident(tablename) from pg_tables where schemaname = 'public' loop
         execute 'alter table ' || t || ' set (autovacuum_enabled = false, toast.autovacuum_enabled = false)';
       end loop; end $$`,
  );
  let passed = 0;
  let failed = 0;
  const started = Date.now();
  let lastProgress = started;
  let runs = 0;
  const run = async (seed: string, events: SimEvent[]) => {
    const name = `sim_${process.pid}_${runs++}`;
    await admin(adminUrl, `create database ${name} template ${template}`);
    const database = createDatabase(urlAsRole(dbUrl(adminUrl, name), SIM_RUNTIME_ROLE), { max: 12 });
    try {
      return await runWorld(database, generateWorld(seed, worldOptions), events, {
        seed,
        crashScheduled: options.faults.has('crash'),
      });
    } finally {
      await database.close();
      // SIM_KEEP_DB: keep each run's database for inspection (its URL on stderr).
      if (process.env.SIM_KEEP_DB) process.stderr.write(`sim: kept ${dbUrl(adminUrl, name)}\n`);
      else await admin(adminUrl, `drop database ${name} with (force)`);
    }
  };
  try {
    for (const seed of options.seeds) {
      const world = generateWorld(seed, worldOptions);
      let events = scheduleEvents(world, seed, { faults: options.faults, maxEvents: options.events });
      if (options.only)
        events = options.only.map((i) => events[i]).filter((e): e is SimEvent => e !== undefined);
      const result = await run(seed, events);
      if (result.problems.length === 0) passed++;
      else {
        failed++;
        const [firstProblem] = result.problems;
        let line = `seed ${seed} FAILED: ${firstProblem}${result.problems.length > 1 ? ` (+${result.problems.length - 1} more)` : ''}`;
        if (options.shrink) {
          const kept = await shrinkEvents(
            events,
            async (subset) => (await run(seed, subset)).problems.length > 0,
          );
          const indices = kept.map((e) => events.indexOf(e));
          line += `\n  shrunk to ${kept.length} of ${events.length} events; replay: npm run sim -- --seed ${seed} --events ${options.events} --intents ${options.intents} --faults ${[...options.faults].join(',') || 'none'} --shapes ${[...options.shapes].join(',') || 'none'} --only ${indices.join(',')}`;
        }
        if (options.verbose) line += result.problems.map((p) => `\n    ${p}`).join('');
        console.log(line);
        if (failed >= options.maxFailures) break;
      }
      if (Date.now() - lastProgress > 10_000) {
        lastProgress = Date.now();
        const done = passed + failed;
        process.stderr.write(
          `sim: ${done}/${options.seeds.length} seeds, ${failed} failed, ${((done * 60_000) / (Date.now() - started)).toFixed(0)} seeds/min\n`,
        );
      }
    }
  } finally {
    await admin(adminUrl, `drop database if exists ${template} with (force)`);
    await stop();
  }
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

async function postgres(): Promise<{ adminUrl: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL, stop: async () => {} };
  const server = await startEphemeralPostgres();
  return { adminUrl: server.url, stop: () => server.stop() };
}

function dbUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`sim: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
