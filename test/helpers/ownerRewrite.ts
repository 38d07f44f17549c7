import pg from 'pg';

/**
 * The rewrite of issue 32, item 2, done as the schema's owner (pass createMigratedDatabase's
 * `ownerUrl`; the daemon's role cannot): the ledger's triggers off, every amount times 100 and every entry's memo and date
 * changed, still balanced, the triggers back on. `where` narrows it to some entries (SQL over
 * ledger_entries `id`); by default every entry, as in the issue.
 */
export async function rewriteLedgerAsOwner(url: string, where = 'true'): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`begin;
      alter table ledger_postings disable trigger user;
      alter table ledger_entries disable trigger user;
      update ledger_postings set amount = amount * 100, tx_id = pg_current_xact_id() where entry_id in (select id from ledger_entries where ${where});
      update ledger_entries set memo = 'rewritten', occurred_at = occurred_at - interval '30 days', tx_id = pg_current_xact_id() where ${where};
      alter table ledger_postings enable trigger user;
      alter table ledger_entries enable trigger user;
      commit;`);
  } finally {
    await client.end();
  }
}
