import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { runMigrations } from '../../../src/db/migrate.ts';
import { createTestDatabase } from '../../helpers/testDatabase.ts';

const FIXTURE = new URL('../../fixtures/migrations', import.meta.url).pathname;

describe('runMigrations', () => {
  it('behavior: the repository migrations apply to an empty database, twice without effect', async () => {
    const url = await createTestDatabase('migrate_repo');
    const first = await runMigrations(url);
    const second = await runMigrations(url);
    expect(second.before).toBe(first.after);
    expect(second.after).toBe(second.before);
  });

  it('behavior: concurrent runs apply each migration exactly once', async () => {
    const url = await createTestDatabase('migrate_fixture');
    const results = await Promise.all(
      [1, 2, 3, 4].map(() => runMigrations(url, { migrationsFolder: FIXTURE })),
    );
    expect(results.filter((r) => r.after > r.before)).toHaveLength(1);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query('select * from fixture_counter');
    const applied = await client.query('select count(*)::int as n from drizzle.__drizzle_migrations');
    await client.end();
    expect(rows).toEqual([{ id: 1, note: 'applied once' }]);
    expect(applied.rows[0].n).toBe(1);
  });
});
