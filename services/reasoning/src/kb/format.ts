/**
 * Text ↔ document for the knowledge-base files (pure). `parseKbTexts` turns the four files'
 * text into rows, listing every shape problem with its file, line and column (it never stops at
 * the first); `serializeKbDocument` writes a document back in the one canonical layout: all
 * columns in their order, `|` between synonyms, numbers as JavaScript prints them (so they read
 * back exactly), kb.json with two-space indents.
 */
import type { z } from 'zod';
import { parseCsv, writeCsv } from './csv.js';
import type { KbProblem, KbProblemCode } from './problems.js';
import {
  CONDITION_COLUMNS,
  conditionRowSchema,
  FEATURE_COLUMNS,
  featureRowSchema,
  KB_FILES,
  kbManifestSchema,
  LINK_COLUMNS,
  linkRowSchema,
  SYNONYM_SEPARATOR,
  type ConditionRow,
  type FeatureRow,
  type KbDocument,
  type KbFileKey,
  type KbManifest,
  type LinkRow,
} from './schema.js';

/** The files' text; a missing key is a missing file. */
export type KbTexts = { readonly [K in KbFileKey]?: string };

/** The line each row came from, in the same order as the rows. */
export interface KbRowLines {
  readonly conditions: readonly number[];
  readonly features: readonly number[];
  readonly links: readonly number[];
}

export interface ParsedKb {
  /** null when kb.json is missing or not a manifest (its problems are listed). */
  readonly manifest: KbManifest | null;
  readonly conditions: readonly ConditionRow[];
  readonly features: readonly FeatureRow[];
  readonly links: readonly LinkRow[];
  readonly lines: KbRowLines;
  /**
   * Ids of rows left out for a bad cell elsewhere in the row: validation treats them as defined so
   * that one typo is reported once, not again at every link to it.
   */
  readonly partialIds: { readonly conditions: ReadonlySet<string>; readonly features: ReadonlySet<string> };
  readonly problems: readonly KbProblem[];
}

/** `label/file` when the base has a label (its directory name), else the file name. */
export function fileLabel(file: string, label: string | undefined): string {
  return label === undefined || label === '' ? file : `${label}/${file}`;
}

function problem(
  file: string,
  row: number | null,
  column: string | null,
  code: KbProblemCode,
  message: string,
): KbProblem {
  return { file, row, column, code, message };
}

function issuePath(path: readonly PropertyKey[]): string | null {
  let out = '';
  for (const key of path) {
    out += typeof key === 'number' ? `[${key}]` : `${out === '' ? '' : '.'}${String(key)}`;
  }
  return out === '' ? null : out;
}

function parseManifest(text: string | undefined, file: string, problems: KbProblem[]): KbManifest | null {
  if (text === undefined) {
    problems.push(problem(file, null, null, 'file-missing', 'the base has no kb.json'));
    return null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    problems.push(problem(file, null, null, 'bad-manifest', `not JSON: ${(err as Error).message}`));
    return null;
  }
  const parsed = kbManifestSchema.safeParse(json);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    problems.push(problem(file, null, issuePath(issue.path), 'bad-manifest', issue.message));
  }
  return null;
}

interface Columns {
  readonly required: readonly string[];
  readonly optional: readonly string[];
}

interface TableResult<T> {
  readonly rows: T[];
  readonly lines: number[];
  /** The `idColumn` cell of rows left out for a bad cell. */
  readonly partialIds: Set<string>;
}

function parseTable<S extends z.ZodType>(
  text: string | undefined,
  file: string,
  columns: Columns,
  schema: S,
  idColumn: string | null,
  problems: KbProblem[],
): TableResult<z.output<S>> {
  const out: TableResult<z.output<S>> = { rows: [], lines: [], partialIds: new Set() };
  if (text === undefined) {
    problems.push(
      problem(file, null, null, 'file-missing', `the base has no ${file.split('/').pop() ?? file}`),
    );
    return out;
  }
  const { records, errors } = parseCsv(text);
  for (const e of errors) problems.push(problem(file, e.line, null, 'bad-row', e.message));
  const [head, ...body] = records;
  if (head === undefined) {
    problems.push(problem(file, 1, null, 'bad-header', 'the file is empty: it needs at least its header'));
    return out;
  }
  const header = head.cells.map((c) => c.trim());
  const known = new Set([...columns.required, ...columns.optional]);
  let headerOk = true;
  const seen = new Set<string>();
  for (const name of header) {
    if (seen.has(name)) {
      problems.push(problem(file, head.line, name, 'bad-header', `column "${name}" appears twice`));
      headerOk = false;
    }
    seen.add(name);
    if (!known.has(name)) {
      problems.push(
        problem(
          file,
          head.line,
          name,
          'bad-header',
          `unknown column "${name}" (the columns are ${[...known].join(', ')})`,
        ),
      );
      headerOk = false;
    }
  }
  for (const name of columns.required) {
    if (!seen.has(name)) {
      problems.push(problem(file, head.line, name, 'bad-header', `required column "${name}" is missing`));
      headerOk = false;
    }
  }
  if (!headerOk) return out;
  for (const record of body) {
    if (record.cells.length !== header.length) {
      problems.push(
        problem(
          file,
          record.line,
          null,
          'bad-row',
          `${record.cells.length} cells where the header has ${header.length} columns`,
        ),
      );
      continue;
    }
    const raw: Record<string, string> = {};
    for (const name of known) raw[name] = '';
    header.forEach((name, i) => (raw[name] = record.cells[i] ?? ''));
    const parsed = schema.safeParse(raw);
    if (parsed.success) {
      out.rows.push(parsed.data);
      out.lines.push(record.line);
      continue;
    }
    for (const issue of parsed.error.issues) {
      problems.push(problem(file, record.line, issuePath(issue.path), 'bad-value', issue.message));
    }
    const id = idColumn === null ? '' : (raw[idColumn] ?? '').trim();
    if (id !== '') out.partialIds.add(id);
  }
  return out;
}

/** Parses the four files' text (shape only; validate.ts checks the rest). */
export function parseKbTexts(texts: KbTexts, label?: string): ParsedKb {
  const problems: KbProblem[] = [];
  const manifest = parseManifest(texts.manifest, fileLabel(KB_FILES.manifest, label), problems);
  const conditions = parseTable(
    texts.conditions,
    fileLabel(KB_FILES.conditions, label),
    CONDITION_COLUMNS,
    conditionRowSchema,
    'id',
    problems,
  );
  const features = parseTable(
    texts.features,
    fileLabel(KB_FILES.features, label),
    FEATURE_COLUMNS,
    featureRowSchema,
    'id',
    problems,
  );
  const links = parseTable(
    texts.links,
    fileLabel(KB_FILES.links, label),
    LINK_COLUMNS,
    linkRowSchema,
    null,
    problems,
  );
  return {
    manifest,
    conditions: conditions.rows,
    features: features.rows,
    links: links.rows,
    lines: { conditions: conditions.lines, features: features.lines, links: links.lines },
    partialIds: { conditions: conditions.partialIds, features: features.partialIds },
    problems,
  };
}

const text = (v: string | null): string => v ?? '';
const num = (v: number | null): string => (v === null ? '' : String(v));

function table<R>(columns: Columns, rows: readonly R[], cells: (row: R) => readonly string[]): string {
  return writeCsv([[...columns.required, ...columns.optional], ...rows.map(cells)]);
}

/** Writes a document as the four files' text, in the canonical layout. */
export function serializeKbDocument(doc: KbDocument): Required<KbTexts> {
  const m = doc.manifest;
  // Keys in a fixed order, optional ones only when set: the same base always writes the same bytes.
  const manifest = {
    format: m.format,
    id: m.id,
    version: m.version,
    title: m.title,
    ...(m.description === undefined ? {} : { description: m.description }),
    sources: m.sources.map((s) => ({
      id: s.id,
      kind: s.kind,
      citation: s.citation,
      ...(s.url === undefined ? {} : { url: s.url }),
      ...(s.licence === undefined ? {} : { licence: s.licence }),
    })),
    ...(m.leak === undefined
      ? {}
      : {
          leak: {
            default: m.leak.default,
            source: m.leak.source,
            ...(m.leak.locator === undefined ? {} : { locator: m.leak.locator }),
          },
        }),
  };
  const join = (list: readonly string[]): string => list.join(SYNONYM_SEPARATOR);
  return {
    manifest: `${JSON.stringify(manifest, null, 2)}\n`,
    // Column order follows CONDITION_COLUMNS / FEATURE_COLUMNS / LINK_COLUMNS.
    conditions: table(CONDITION_COLUMNS, doc.conditions, (r) => [
      r.id,
      text(r.icd10),
      r.title_en,
      text(r.title_vi),
      num(r.prior),
      text(r.prior_source),
      text(r.prior_locator),
      text(r.notes),
    ]),
    features: table(FEATURE_COLUMNS, doc.features, (r) => [
      r.id,
      r.kind,
      r.label_en,
      text(r.label_vi),
      text(r.hpo),
      join(r.synonyms_en),
      join(r.synonyms_vi),
      num(r.leak),
      text(r.leak_source),
      text(r.leak_locator),
      text(r.implies),
      text(r.notes),
    ]),
    links: table(LINK_COLUMNS, doc.links, (r) => [
      r.condition,
      r.feature,
      num(r.probability),
      text(r.source),
      num(r.specificity),
      text(r.locator),
      text(r.as_given),
      text(r.notes),
    ]),
  };
}
