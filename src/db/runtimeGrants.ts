import type pg from 'pg';
import { StablebooksError } from '../errors/stablebooksError.ts';

/**
 * What the daemon's own database role (RUNTIME_ROLE) may do to each table: the one place that
 * says it (docs/decisions.md, "Two database roles"). `stablebooks migrate`, run as the owner of
 * the schema, grants exactly these verbs after the migrations and revokes everything else, so a
 * compromised daemon can add to the books but never alter, truncate or re-trigger their past: it
 * owns nothing (only an owner may ALTER a table or DISABLE its triggers) and holds no TRUNCATE.
 *
 * Every table the migrations create must be listed (test/integration/db/runtimeGrants.test.ts
 * fails otherwise), so a new table cannot silently ship without the grants the daemon needs.
 * The verbs come from an audit of every write in src/ and jobs/; an UPSERT (`on conflict do
 * update`) and a row lock (`select ... for update`) need UPDATE as well.
 */
export type TableVerb = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

export interface TableGrant {
  verbs: readonly TableVerb[];
  /** Why these verbs: the writes that need them. */
  why: string;
}

/** The ledger's own rows and other history: read and added to, never changed. */
const APPEND_ONLY: readonly TableVerb[] = ['SELECT', 'INSERT'];

/** Tables of the `public` schema (where the migrations create everything) and the runtime's verbs. */
export const RUNTIME_TABLE_GRANTS: Readonly<Record<string, TableGrant>> = {
  ledger_accounts: { verbs: APPEND_ONLY, why: 'ensureAccounts inserts; immutable (migration 0001)' },
  ledger_entries: { verbs: APPEND_ONLY, why: 'postEntry inserts; immutable (migration 0001)' },
  ledger_postings: { verbs: APPEND_ONLY, why: 'postEntry inserts; immutable (migration 0001)' },
  ledger_seals: { verbs: APPEND_ONLY, why: 'sealLedger inserts the hash chain; immutable (migration 0017)' },
  ledger_balance_checkpoints: {
    verbs: ['SELECT', 'INSERT', 'DELETE'],
    why: 'checkpointBalances adds checkpoints and deletes unusable or superseded ones (a cache: balances are derived from postings)',
  },
  checkout_intent_status_history: { verbs: APPEND_ONLY, why: 'applyIntentSnapshot appends' },
  balance_proofs: { verbs: APPEND_ONLY, why: 'recon records each proof once' },
  checkout_intents: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'intent tracking and snapshots update status; settlement locks intents (for update)',
  },
  checkout_intent_creations: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'createIntent records its outcome',
  },
  webhook_inbox: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'the inbox marks webhooks processed or failed',
  },
  webhook_nonces: {
    verbs: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    why: 'inboxWriter re-arms an expired nonce (upsert); inbox maintenance deletes expired ones',
  },
  event_outbox: {
    verbs: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    why: 'deliverEvents leases, marks and prunes delivered events',
  },
  findings: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'findings are refreshed, acknowledged and resolved',
  },
  payouts: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'payouts move through their states; settlement locks them',
  },
  chain_cursors: { verbs: ['SELECT', 'INSERT', 'UPDATE'], why: 'the indexer advances its cursor (upsert)' },
  chain_transfers: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'the indexer upserts transfers; finality, reorgs and settlement update them',
  },
  chain_watched_wallets: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'claim-link pools are watched, then closed',
  },
  suspense_classifications: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'a classification is marked reversed (its entries stay in the ledger)',
  },
  allocations: {
    verbs: APPEND_ONLY,
    why: 'settlement allocates transfers to obligations and releases them with negated rows; immutable (migration 0022)',
  },
  rates: {
    verbs: APPEND_ONLY,
    why: 'rates import and intents add rates (insert ... on conflict do nothing); a rate is never changed',
  },
  rate_supersessions: {
    verbs: APPEND_ONLY,
    why: 'rates supersede adds a row; the imported rate and every earlier supersession stay as history',
  },
  corrections: {
    verbs: ['SELECT', 'INSERT', 'UPDATE'],
    why: 'adjust move records a correction; adjust undo marks it undone (its entries stay in the ledger)',
  },
  recon_runs: { verbs: ['SELECT', 'INSERT', 'UPDATE'], why: 'a run records its phase and outcome' },
  alert_states: {
    verbs: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    why: 'evaluateAlerts upserts, notifies and forgets resolved alerts',
  },
};

/** Tables outside `public` the runtime may not touch at all: the migrator's bookkeeping. */
export const RUNTIME_NO_ACCESS = ['drizzle.__drizzle_migrations'] as const;

/** The schemas whose tables migrate manages (those the migrations create tables in). */
export const MANAGED_SCHEMAS = ['public', 'drizzle'] as const;

/** RUNTIME_ROLE cannot be used: one line saying why and what to do; a retry cannot help. */
export class RuntimeRoleError extends StablebooksError {
  override name = 'RuntimeRoleError';
  readonly retryable = false;
}

export interface GrantSummary {
  role: string;
  /** Tables granted to the role, by name. */
  granted: number;
  /** Tables of the managed schemas the role holds nothing on (not listed above). */
  revoked: number;
}

/**
 * Grants `role` exactly RUNTIME_TABLE_GRANTS (and USAGE on the sequences of the tables it
 * inserts into), revoking every other privilege it has on the managed schemas' tables and
 * sequences. Idempotent, in one transaction; run as the owner of the tables after migrating.
 * Refuses a role that is missing, a superuser, or the owner (or a member of the owner's role):
 * grants cannot restrict those, so the separation would be a pretence.
 */
export async function applyRuntimeGrants(client: pg.Client, role: string): Promise<GrantSummary> {
  await checkRuntimeRole(client, role);
  const who = client.escapeIdentifier(role);
  await client.query('begin');
  try {
    await client.query(`grant usage on schema public to ${who}`);
    // The runtime must not create objects (a table of its own, a function shadowing one). This
    // takes back a CREATE given to the role itself; the one PostgreSQL 14 and older give PUBLIC
    // is revoked by whoever sets up the database (README, "Two database roles").
    await client.query(`revoke create on schema public from ${who}`);
    const tables = await client.query<{ schema: string; name: string }>(
      `select schemaname as schema, tablename as name from pg_tables
       where schemaname = any($1::text[]) order by 1, 2`,
      [MANAGED_SCHEMAS],
    );
    let granted = 0;
    for (const { schema, name } of tables.rows) {
      const table = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`;
      // Revoking the table's privileges revokes its column privileges too.
      await client.query(`revoke all on table ${table} from ${who}`);
      const grant = schema === 'public' ? RUNTIME_TABLE_GRANTS[name] : undefined;
      if (!grant) continue;
      await client.query(`grant ${grant.verbs.join(', ')} on table ${table} to ${who}`);
      granted += 1;
    }
    const sequences = await client.query<{ schema: string; name: string; insertable: boolean }>(
      `select s.schemaname as schema, s.sequencename as name,
              coalesce(bool_or(t.relname = any($2::text[])), false) as insertable
       from pg_sequences s
       left join pg_depend d on d.objid = format('%I.%I', s.schemaname, s.sequencename)::regclass
         and d.classid = 'pg_class'::regclass and d.deptype in ('a', 'i')
       left join pg_class t on t.oid = d.refobjid and t.relnamespace = 'public'::regnamespace
       where s.schemaname = any($1::text[])
       group by 1, 2 order by 1, 2`,
      [MANAGED_SCHEMAS, insertableTables()],
    );
    for (const { schema, name, insertable } of sequences.rows) {
      const sequence = `${client.escapeIdentifier(schema)}.${client.escapeIdentifier(name)}`;
      await client.query(`revoke all on sequence ${sequence} from ${who}`);
      // nextval() for a bigserial default needs USAGE; nothing reads or sets the sequences.
      if (insertable) await client.query(`grant usage on sequence ${sequence} to ${who}`);
    }
    await client.query('commit');
    return { role, granted, revoked: tables.rows.length - granted };
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  }
}

function insertableTables(): string[] {
  return Object.entries(RUNTIME_TABLE_GRANTS)
    .filter(([, g]) => g.verbs.includes('INSERT'))
    .map(([name]) => name);
}

/**
 * Throws a RuntimeRoleError unless `role` exists and grants can restrict it: not a superuser, not
 * the role `client` runs as (the owner) nor a member of it. Migrate checks it before migrating too,
 * so a wrong RUNTIME_ROLE changes nothing.
 */
export async function checkRuntimeRole(client: pg.Client, role: string): Promise<void> {
  const { rows } = await client.query<{ superuser: boolean; owner: boolean; current: string }>(
    `select r.rolsuper as superuser, current_user as current,
            r.rolname = current_user or pg_has_role(r.rolname, current_user, 'MEMBER') as owner
     from pg_roles r where r.rolname = $1`,
    [role],
  );
  const found = rows[0];
  if (!found)
    throw new RuntimeRoleError(
      `RUNTIME_ROLE: role "${role}" does not exist; create it first (as a superuser or a role with CREATEROLE: create role ${role} login password '...'), then run migrate again`,
    );
  if (found.superuser)
    throw new RuntimeRoleError(
      `RUNTIME_ROLE: role "${role}" is a superuser, which no grant can restrict; give the daemon a role without SUPERUSER`,
    );
  if (found.owner)
    throw new RuntimeRoleError(
      `RUNTIME_ROLE: role "${role}" is (or is a member of) "${found.current}", the role migrate runs as and the owner of the tables; give the daemon a role of its own`,
    );
}
