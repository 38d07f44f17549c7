import type pg from 'pg';

/**
 * Why the role DATABASE_URL logs in as should not run the daemon, or undefined. The daemon's role
 * must not be a superuser (no grant restricts one) nor own a table, or be a member of the owner
 * (an owner may switch the ledger's immutability triggers off and rewrite the books): README,
 * "Two database roles". `stablebooks doctor` runs with the daemon's environment, so this is the
 * daemon's role.
 */
export async function databaseRoleWarning(client: pg.Client): Promise<string | undefined> {
  const { rows } = await client.query<{ role: string; superuser: boolean; owned: string[] }>(`
    select current_user as role,
           (select rolsuper from pg_roles where rolname = current_user) as superuser,
           array(select c.relname::text from pg_class c
                 where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p')
                   and pg_has_role(current_user, c.relowner, 'MEMBER')
                 order by c.relname like 'ledger\\_%' desc, c.relname) as owned`);
  const found = rows[0];
  if (!found) return undefined;
  const fix =
    'give the daemon a role of its own (stablebooks migrate\'s RUNTIME_ROLE, README "Two database roles")';
  if (found.superuser)
    return `role ${found.role} is a superuser: the daemon could rewrite the books' past; ${fix}`;
  if (found.owned.length === 0) return undefined;
  const some = found.owned.slice(0, 3).join(', ');
  const more = found.owned.length > 3 ? ` and ${found.owned.length - 3} more` : '';
  return `role ${found.role} owns ${some}${more}: the daemon could switch the ledger's triggers off and rewrite the books' past; ${fix}`;
}
