import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { findingsCsvHeader, findingsCsvLine, renderCsv } from './renderCsv.ts';
import { type RenderHtmlOptions, renderHtml } from './renderHtml.ts';
import { renderJson } from './renderJson.ts';
import { renderMarkdown } from './renderMarkdown.ts';
import type { FindingsPage } from './reportFindings.ts';
import { FINDINGS_FULL_LIST, type ReconReport } from './reportModel.ts';

export const REPORT_FORMATS = ['json', 'csv', 'md', 'html'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];

export interface WrittenFile {
  name: string;
  path: string;
  sha256: string;
  bytes: number;
}

/**
 * Writes the report in the asked formats into `dir` (report.json, report.md, report.html and
 * csv/<table>.csv), each through a temporary file and a rename, so a reader never sees half a
 * file and a rerun of the same period replaces them whole. findings.csv holds every finding of
 * the three lists, which the report only counts and samples: it is written from `findings`, read
 * page by page (reportFindings.ts findingsPages), so memory holds one page, never the list.
 * `html` carries the chain registry, for the HTML page's chain names and explorer links.
 */
export async function writeReportFiles(
  report: ReconReport,
  dir: string,
  formats: readonly ReportFormat[],
  findings: () => AsyncIterable<FindingsPage>,
  html: RenderHtmlOptions = {},
): Promise<WrittenFile[]> {
  const files: { name: string; content: () => string }[] = [];
  if (formats.includes('json')) files.push({ name: 'report.json', content: () => renderJson(report) });
  if (formats.includes('md')) files.push({ name: 'report.md', content: () => renderMarkdown(report) });
  if (formats.includes('html')) files.push({ name: 'report.html', content: () => renderHtml(report, html) });
  if (formats.includes('csv'))
    for (const f of renderCsv(report)) files.push({ name: join('csv', f.name), content: () => f.content });

  const written: WrittenFile[] = [];
  for (const f of files) {
    const path = join(dir, f.name);
    await mkdir(join(path, '..'), { recursive: true });
    const bytes = Buffer.from(f.content(), 'utf8');
    const tmp = `${path}.${process.pid}.tmp`;
    await writeFile(tmp, bytes);
    await rename(tmp, path);
    written.push({
      name: f.name,
      path,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      bytes: bytes.length,
    });
  }
  if (formats.includes('csv')) written.push(await writeStreamed(dir, FINDINGS_FULL_LIST, findings()));
  return written;
}

const CHUNK_CHARS = 32_768;

/** findings.csv: the header, then each page's lines, hashed and counted as they are written. */
async function writeStreamed(
  dir: string,
  name: string,
  pages: AsyncIterable<FindingsPage>,
): Promise<WrittenFile> {
  const path = join(dir, name);
  await mkdir(join(path, '..'), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  const out = createWriteStream(tmp);
  const hash = createHash('sha256');
  let bytes = 0;
  const write = async (text: string) => {
    const chunk = Buffer.from(text, 'utf8');
    hash.update(chunk);
    bytes += chunk.length;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  try {
    // Written in chunks of ~CHUNK_CHARS: a whole page as one string would be a large object,
    // which only a full garbage collection frees (the process's memory would grow page by page).
    let chunk = findingsCsvHeader();
    for await (const page of pages) {
      for (const row of page.rows) {
        chunk += findingsCsvLine(page.list, row);
        if (chunk.length >= CHUNK_CHARS) {
          await write(chunk);
          chunk = '';
        }
      }
    }
    await write(chunk);
    out.end();
    await once(out, 'finish');
  } catch (err) {
    out.destroy();
    await rm(tmp, { force: true });
    throw err;
  }
  await rename(tmp, path);
  return { name, path, sha256: hash.digest('hex'), bytes };
}
