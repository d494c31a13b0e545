import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { parseCodeSet, type LineError } from '../domain/parse-records.js';
import { CodeRecordSchema, type CodeRecord, type CodeType, type SetMeta } from '../schemas/code-record.js';
import { sha256File, type CodeStore } from './code-store.js';
import { readIcd10CmTabular } from './icd10cm-xml.js';
import { readIcd10PcsSqlite } from './icd10pcs-sqlite.js';

/**
 * Imports one code set into the store: parse and validate everything first, write (atomically)
 * only when nothing is wrong, so a bad file never replaces the set already there.
 */

export const IMPORT_FORMATS = ['csv', 'jsonl', 'icd10cm-xml', 'icd10pcs-sqlite'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

export interface ImportRequest {
  readonly type: CodeType;
  readonly file: string;
  /** Default: from the file's extension (.csv, .jsonl/.ndjson, .xml, .db/.sqlite). */
  readonly format?: ImportFormat;
  /** Where it came from, for `GET /code_types` (default: the file name). */
  readonly source?: string;
  readonly license?: string | null;
}

export type ImportResult =
  | { readonly ok: true; readonly meta: SetMeta; readonly warnings: readonly LineError[] }
  | { readonly ok: false; readonly errors: readonly LineError[] };

export function formatOf(file: string): ImportFormat | undefined {
  const lower = file.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return 'jsonl';
  if (lower.endsWith('.xml')) return 'icd10cm-xml';
  if (lower.endsWith('.db') || lower.endsWith('.sqlite')) return 'icd10pcs-sqlite';
  return undefined;
}

export async function importCodeSet(store: CodeStore, request: ImportRequest): Promise<ImportResult> {
  const format = request.format ?? formatOf(request.file);
  if (format === undefined) {
    return {
      ok: false,
      errors: [{ line: 0, message: `cannot tell the format of ${request.file}: pass --format` }],
    };
  }
  let records: CodeRecord[];
  let warnings: LineError[] = [];
  try {
    if (format === 'csv' || format === 'jsonl') {
      const parsed = parseCodeSet(await readFile(request.file, 'utf8'), format, request.type);
      if (parsed.errors.length > 0) return { ok: false, errors: parsed.errors };
      records = parsed.records;
      warnings = parsed.warnings;
    } else {
      const raw =
        format === 'icd10cm-xml' ? await readIcd10CmTabular(request.file) : readIcd10PcsSqlite(request.file);
      const wrongType = raw.length > 0 && raw[0]?.type !== request.type;
      if (wrongType)
        return {
          ok: false,
          errors: [{ line: 0, message: `${format} holds ${raw[0]?.type ?? '?'} codes, not ${request.type}` }],
        };
      records = [];
      for (const [i, r] of raw.entries()) {
        const parsed = CodeRecordSchema.safeParse(r);
        if (!parsed.success)
          return { ok: false, errors: [{ line: i + 1, message: `${r.code}: ${parsed.error.message}` }] };
        records.push(parsed.data);
      }
      if (records.length === 0)
        return { ok: false, errors: [{ line: 0, message: 'the file holds no codes' }] };
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return {
      ok: false,
      errors: [{ line: 0, message: e.code === 'ENOENT' ? `no such file: ${request.file}` : e.message }],
    };
  }
  const meta = await store.write(
    {
      type: request.type,
      source: request.source ?? basename(request.file),
      format,
      license: request.license ?? null,
      sha256: await sha256File(request.file),
      imported_at: new Date().toISOString(),
    },
    records,
  );
  return { ok: true, meta, warnings };
}
