import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/**
 * Where an export goes. A file is written to `<file>.<pid>.tmp` beside it and renamed over it once
 * complete, so a reader never sees half a journal and a failed export leaves the old file as it
 * was. A path that exists and is not a regular file (/dev/null, a pipe) is written directly, since
 * renaming over it would replace it. Without a path: stdout, never closed.
 */
export interface JournalOutput {
  stream: Writable;
  /** Flushes and, for a file, renames the temporary file into place. */
  commit(): Promise<void>;
  /** Drops what was written (a file's temporary file); stdout keeps what it got. */
  abort(): Promise<void>;
}

export async function openJournalOutput(path: string | undefined): Promise<JournalOutput> {
  if (path === undefined) {
    const stream = process.stdout;
    return {
      stream,
      commit: () =>
        new Promise<void>((resolve, reject) => stream.write('', (err) => (err ? reject(err) : resolve()))),
      abort: async () => {},
    };
  }
  const existing = await stat(path).catch(() => null);
  const direct = existing !== null && !existing.isFile();
  const target = direct ? path : `${path}.${process.pid}.tmp`;
  const stream = createWriteStream(target);
  await once(stream, 'open');
  return {
    stream,
    async commit() {
      stream.end();
      await once(stream, 'finish');
      if (!stream.closed) await once(stream, 'close');
      if (!direct) await rename(target, path);
    },
    async abort() {
      stream.destroy();
      if (!direct) await rm(target, { force: true });
    },
  };
}
