import { CodeTypeSchema, normalizeCode, type CodeRecord, type CodeType } from '../schemas/code-record.js';
import type { IndexedCode } from './lexical-index.js';
import { readCsv } from './parse-records.js';

/**
 * Curated Vietnamese terms (`data/vi-terms.csv`: `type,code,title_vi,synonyms`), ClinicalSuite's
 * own translations laid over the imported sets: a code without a Vietnamese title gets this one
 * (marked `curated`), and the terms become synonyms. An imported Vietnamese title always wins.
 */

export interface OverlayEntry {
  readonly type: CodeType;
  readonly code: string;
  readonly titleVi: string;
  readonly synonyms: readonly string[];
}

export function parseOverlayCsv(text: string): OverlayEntry[] {
  const { records, errors } = readCsv(text);
  if (errors.length > 0) throw new Error(`line ${errors[0]?.line ?? 0}: ${errors[0]?.message ?? ''}`);
  const header = records.shift()?.fields.map((f) => f.trim());
  if (header?.join(',') !== 'type,code,title_vi,synonyms')
    throw new Error('the header must be type,code,title_vi,synonyms');
  return records.map(({ line, fields }) => {
    const [type, code, titleVi, synonyms] = fields.map((f) => f.trim());
    const parsedType = CodeTypeSchema.safeParse(type);
    if (!parsedType.success || code === undefined || code === '' || titleVi === undefined || titleVi === '')
      throw new Error(`line ${line}: expected type,code,title_vi,synonyms`);
    return {
      type: parsedType.data,
      code,
      titleVi,
      synonyms: (synonyms ?? '')
        .split('|')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    };
  });
}

export function applyOverlay(
  records: readonly CodeRecord[],
  overlay: readonly OverlayEntry[],
): { codes: IndexedCode[]; unmatched: OverlayEntry[] } {
  const byKey = new Map<string, OverlayEntry>();
  for (const e of overlay) byKey.set(`${e.type}:${normalizeCode(e.code)}`, e);
  const used = new Set<string>();
  const codes = records.map((record): IndexedCode => {
    const key = `${record.type}:${normalizeCode(record.code)}`;
    const entry = byKey.get(key);
    if (entry === undefined)
      return { record, titleViSource: record.title_vi === null ? null : 'import', synonyms: record.synonyms };
    used.add(key);
    const own = record.title_vi !== null;
    const extra = [...(own ? [entry.titleVi] : []), ...entry.synonyms];
    return {
      record: own ? record : { ...record, title_vi: entry.titleVi },
      titleViSource: own ? 'import' : 'curated',
      synonyms: [...new Set([...record.synonyms, ...extra])],
    };
  });
  const unmatched = overlay.filter((e) => !used.has(`${e.type}:${normalizeCode(e.code)}`));
  return { codes, unmatched };
}
