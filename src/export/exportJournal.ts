import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { Db } from '../db/database.ts';
import { currencyMinorUnit } from '../money/currencyMinorUnits.ts';
import { loadRateBook, type StoreValuation } from '../valuation/valueLedger.ts';
import { beancountWriter } from './beancount.ts';
import { csvWriter } from './csv.ts';
import {
  type ExportAccount,
  type ExportBooks,
  type ExportFormat,
  ExportInputError,
  type JournalWriter,
  utcDate,
} from './exportModel.ts';
import { hledgerWriter } from './hledger.ts';
import type { JournalOutput } from './journalOutput.ts';
import { ledgerWriter } from './ledger.ts';
import { exportAssets } from './naming.ts';
import { entryPages, firstEntryTime, loadAccounts, openingBalances } from './readEntries.ts';

export interface ExportOptions {
  format: ExportFormat;
  storeId: string | null;
  /** Start of the period (included); null: from the first entry, with no opening balances. */
  from: Date | null;
  /** End of the period (excluded); null: up to the last entry. */
  to: Date | null;
  /** Entries per page read (default 2000). */
  pageSize?: number;
  /** Value each posting in this currency, in every format; par per store from STORES_FILE. */
  value?: { currency: string; stores: readonly StoreValuation[] };
}

export interface ExportResult {
  entries: number;
  postings: number;
  /** Accounts with an opening balance. */
  openingLines: number;
  /** Things the tool may not hold exactly (beancount's 28 digits), for stderr. */
  warnings: string[];
}

const WRITERS: Record<ExportFormat, (books: ExportBooks) => JournalWriter> = {
  hledger: hledgerWriter,
  beancount: beancountWriter,
  ledger: ledgerWriter,
  csv: csvWriter,
};

/** Text is handed to the stream in chunks of about this many characters (see writeChunks). */
const CHUNK_CHARS = 32_768;

/**
 * Writes the selected entries in the chosen format to the output `open` gives, which it asks for
 * only once the input is known good (the store has accounts, the period is not empty), so a
 * refused export writes nothing. Reads in one repeatable-read, read-only transaction: the opening
 * balances and the entries are the same snapshot, whatever is posted meanwhile. Memory is one page
 * of entries and one chunk of text: each chunk waits for the stream to drain (backpressure).
 */
export async function exportJournal(
  db: Db,
  options: ExportOptions,
  open: () => Promise<JournalOutput>,
): Promise<ExportResult> {
  const { from, to, storeId } = options;
  if (from && to && from >= to) throw new ExportInputError('--from must be before --to');
  return db.transaction(
    async (tx) => {
      const accounts = await loadAccounts(tx, storeId);
      if (storeId !== null && accounts.length === 0)
        throw new ExportInputError(`--store: ${storeId} is not a store of the ledger (it has no accounts)`);
      const byId = new Map<string, ExportAccount>(accounts.map((a) => [a.id.toString(), a]));
      const assets = exportAssets(accounts);
      const opening = from ? await openingBalances(tx, byId, storeId, from) : [];
      const first = from ? null : await firstEntryTime(tx, { storeId, from, to });
      const books: ExportBooks = {
        format: options.format,
        storeId,
        from,
        to,
        accounts,
        assets,
        startDate: utcDate(from ?? first ?? to ?? new Date()),
        valuation: options.value
          ? {
              currency: options.value.currency,
              minorUnit: currencyMinorUnit(options.value.currency),
              // Read in the export's snapshot, so the values match the entries written.
              rateOn: await loadRateBook(tx, options.value.currency, options.value.stores),
            }
          : null,
      };
      const writer = WRITERS[options.format](books);
      const output = await open();
      try {
        const result = await writeChunks(output.stream, async (emit) => {
          await emit(writer.header());
          if (from) await emit(writer.opening({ at: from, lines: opening }));
          let entries = 0;
          let postings = 0;
          for await (const page of entryPages(
            tx,
            byId,
            { storeId, from, to },
            options.pageSize,
            books.valuation !== null,
          )) {
            for (const e of page) {
              await emit(writer.entry(e));
              entries++;
              postings += e.postings.length;
            }
          }
          if (writer.closing) await emit(writer.closing());
          return { entries, postings };
        });
        await output.commit();
        return { ...result, openingLines: opening.length, warnings: writer.warnings() };
      } catch (err) {
        await output.abort();
        throw err;
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
}

/**
 * Runs `produce`, handing its text to `stream` in chunks of ~CHUNK_CHARS (one large string per
 * page would be a large object that only a full collection frees), waiting for 'drain' whenever
 * the stream's buffer is full. A stream error (a closed pipe) fails the export at the next write.
 */
async function writeChunks<T>(
  stream: Writable,
  produce: (emit: (text: string) => Promise<void>) => Promise<T>,
): Promise<T> {
  let failure: Error | null = null;
  const onError = (err: Error) => {
    failure ??= err;
  };
  // Left attached: a pipe closed after the export (stdout into `head`) must not crash the process.
  stream.on('error', onError);
  let chunk = '';
  const flush = async () => {
    if (failure) throw failure;
    if (chunk === '') return;
    const text = chunk;
    chunk = '';
    if (!stream.write(text)) await once(stream, 'drain');
    if (failure) throw failure;
  };
  const result = await produce(async (text) => {
    chunk += text;
    if (chunk.length >= CHUNK_CHARS) await flush();
  });
  await flush();
  return result;
}
