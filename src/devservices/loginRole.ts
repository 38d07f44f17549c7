import pg from 'pg';

/** A PostgreSQL login role: its name and password. */
export interface LoginRole {
  name: string;
  password: string;
}

/**
 * Creates `role`, a plain login role (no superuser, no CREATEDB or CREATEROLE), on the server of
 * `adminUrl`, a superuser's URL, unless it exists: for the demo and tests, whose daemon runs as
 * such a role (README, "Two database roles"). Roles are cluster-wide, so several callers may
 * race: a concurrent `create role` of the same role counts as done. An existing role is left as
 * it is (altering it from several callers at once fails with "tuple concurrently updated").
 */
export async function ensureLoginRole(adminUrl: string, role: LoginRole): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const name = client.escapeIdentifier(role.name);
    const attributes = `login nosuperuser nocreatedb nocreaterole password ${client.escapeLiteral(role.password)}`;
    const exists = await client.query('select 1 from pg_roles where rolname = $1', [role.name]);
    if (exists.rowCount) return;
    try {
      await client.query(`create role ${name} ${attributes}`);
    } catch (err) {
      // 42710 duplicate_object, 23505 unique_violation: another caller made it just now.
      const code = (err as { code?: string }).code;
      if (code !== '42710' && code !== '23505') throw err;
    }
  } finally {
    await client.end();
  }
}

/** `url` logged in as `role` instead: same server, database and parameters. */
export function urlAsRole(url: string, role: LoginRole): string {
  const as = new URL(url);
  as.username = role.name;
  as.password = role.password;
  return as.toString();
}
