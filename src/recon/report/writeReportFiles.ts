import { createHash } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderCsv } from './renderCsv.ts';
import { renderHtml } from './renderHtml.ts';
import { renderJson } from './renderJson.ts';
import { renderMarkdown } from './renderMarkdown.ts';
import type { ReconReport } from './reportModel.ts';

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
 * file and a rerun of the same period replaces them whole.
 */
export async function writeReportFiles(
  report: ReconReport,
  dir: string,
  formats: readonly ReportFormat[],
): Promise<WrittenFile[]> {
  const files: { name: string; content: string }[] = [];
  if (formats.includes('json')) files.push({ name: 'report.json', content: renderJson(report) });
  if (formats.includes('md')) files.push({ name: 'report.md', content: renderMarkdown(report) });
  if (formats.includes('html')) files.push({ name: 'report.html', content: renderHtml(report) });
  if (formats.includes('csv'))
    for (const f of renderCsv(report)) files.push({ name: join('csv', f.name), content: f.content });

  const written: WrittenFile[] = [];
  for (const f of files) {
    const path = join(dir, f.name);
    await mkdir(join(path, '..'), { recursive: true });
    const bytes = Buffer.from(f.content, 'utf8');
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
  return written;
}
