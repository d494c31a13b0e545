import type { z } from 'zod';
import { CodeRecordSchema, normalizeCode, type CodeRecord, type CodeType } from '../schemas/code-record.js';

/**
 * Code-set files in the documented formats, parsed and validated line by line: CSV with a header
 * naming the columns `code,type,title_vi,title_en,synonyms,parent` (type optional; synonyms
 * separated by `|`), or JSONL with the same fields (synonyms an array or a `|` string). Every
 * problem is reported with its line; nothing is accepted when there is one.
 */

export interface LineError {
  readonly line: number;
  readonly message: string;
}

export interface ParsedSet {
  readonly records: CodeRecord[];
  readonly errors: LineError[];
  /** Parents that name no code of the set (kept, reported). */
  readonly warnings: LineError[];
}

const COLUMNS = ['code', 'type', 'title_vi', 'title_en', 'synonyms', 'parent'] as const;
const MAX_ERRORS = 50;

export function parseCodeSet(text: string, format: 'csv' | 'jsonl', type: CodeType): ParsedSet {
  const rows = format === 'csv' ? csvRows(text) : jsonlRows(text);
  const errors: LineError[] = [...rows.errors];
  const records: CodeRecord[] = [];
  const lines: number[] = [];
  const seen = new Map<string, number>();
  for (const { line, value } of rows.rows) {
    if (errors.length >= MAX_ERRORS) break;
    const input = { ...value, type: value['type'] ?? type };
    if (input.type !== type) {
      errors.push({ line, message: `type is ${JSON.stringify(input.type)} but the import is for ${type}` });
      continue;
    }
    const parsed = CodeRecordSchema.safeParse(input);
    if (!parsed.success) {
      errors.push({ line, message: describe(parsed.error) });
      continue;
    }
    const key = normalizeCode(parsed.data.code);
    const first = seen.get(key);
    if (first !== undefined) {
      errors.push({ line, message: `duplicate code ${parsed.data.code} (first on line ${first})` });
      continue;
    }
    seen.set(key, line);
    records.push(parsed.data);
    lines.push(line);
  }
  const warnings: LineError[] = [];
  records.forEach((r, i) => {
    if (r.parent !== null && !seen.has(normalizeCode(r.parent)))
      warnings.push({ line: lines[i] ?? 0, message: `parent ${r.parent} of ${r.code} is not in the set` });
  });
  if (errors.length === 0 && records.length === 0)
    errors.push({ line: 1, message: 'the file holds no codes' });
  errors.sort((a, b) => a.line - b.line);
  return { records, errors, warnings };
}

function describe(error: z.ZodError): string {
  return error.issues
    .map((i) => (i.path.length > 0 ? `${i.path.map(String).join('.')}: ${i.message}` : i.message))
    .join('; ');
}

interface Rows {
  readonly rows: { line: number; value: Record<string, unknown> }[];
  readonly errors: LineError[];
}

function jsonlRows(text: string): Rows {
  const rows: Rows['rows'] = [];
  const errors: LineError[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        errors.push({ line: i + 1, message: 'expected a JSON object' });
        return;
      }
      rows.push({ line: i + 1, value: value as Record<string, unknown> });
    } catch (err) {
      errors.push({ line: i + 1, message: `invalid JSON: ${(err as Error).message}` });
    }
  });
  return { rows, errors };
}

/** RFC 4180 CSV records with the line each starts on: quoted fields may hold commas, quotes ("") and newlines. */
export function readCsv(text: string): {
  records: { line: number; fields: string[] }[];
  errors: LineError[];
} {
  const errors: LineError[] = [];
  const records: { line: number; fields: string[] }[] = [];
  let fields: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRecord = (): void => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0]?.trim() === '')) records.push({ line: recordLine, fields });
    fields = [];
    field = '';
  };
  for (; i < text.length; i++) {
    const c = text.charAt(i);
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else {
        if (c === '\n') line++;
        field += c;
      }
    } else if (c === '"' && field.trim() === '') {
      quoted = true;
      field = '';
    } else if (c === ',') {
      fields.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
      recordLine = line;
    } else field += c;
  }
  if (quoted) errors.push({ line: recordLine, message: 'unterminated quoted field' });
  else if (field !== '' || fields.length > 0) endRecord();
  return { records, errors };
}

/** CSV rows keyed by the header's column names. */
function csvRows(text: string): Rows {
  const { records, errors } = readCsv(text);
  const header = records.shift();
  if (header === undefined) return { rows: [], errors: [{ line: 1, message: 'the file is empty' }] };
  const names = header.fields.map((h) => h.trim().toLowerCase());
  const unknown = names.filter((n) => !(COLUMNS as readonly string[]).includes(n));
  if (unknown.length > 0 || !names.includes('code')) {
    return {
      rows: [],
      errors: [
        {
          line: header.line,
          message: `the header must name the columns ${COLUMNS.join(',')} (code required${
            unknown.length > 0 ? `; unknown: ${unknown.join(', ')}` : ''
          })`,
        },
      ],
    };
  }
  const rows: Rows['rows'] = [];
  for (const r of records) {
    if (r.fields.length !== names.length) {
      errors.push({
        line: r.line,
        message: `expected ${names.length} fields, found ${r.fields.length}`,
      });
      continue;
    }
    const value: Record<string, unknown> = {};
    names.forEach((n, j) => {
      const v = r.fields[j] ?? '';
      if (v.trim() !== '') value[n] = v;
    });
    rows.push({ line: r.line, value });
  }
  return { rows, errors };
}
