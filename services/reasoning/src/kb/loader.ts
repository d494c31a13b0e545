/**
 * The knowledge base's file adapter: reads a base's directory (kb.json + three CSV files) and
 * hands the text to the pure parser and validator; writes a document back in the canonical layout.
 * Problems name files as `<directory name>/<file>`.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { KnowledgeBase } from '../domain/types.js';
import { parseKbTexts, serializeKbDocument, type KbTexts, type ParsedKb } from './format.js';
import { mergeKnowledgeBases, type MergeOptions, type UnifiedFeature } from './merge.js';
import { KnowledgeBaseError, type KbProblem } from './problems.js';
import { KB_FILES, type KbDocument, type KbFileKey } from './schema.js';
import { checkKbTexts, sortProblems, type KbLoadReport, type KbValidationResult } from './validate.js';

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The four files' text; a missing file is left out (and reported by the parser). */
export async function readKbTexts(dir: string): Promise<KbTexts> {
  const texts: { -readonly [K in KbFileKey]?: string } = {};
  for (const key of Object.keys(KB_FILES) as KbFileKey[]) {
    const text = await readIfPresent(join(dir, KB_FILES[key]));
    if (text !== undefined) texts[key] = text;
  }
  return texts;
}

/** The label problems carry for a base: its directory's name. */
export function kbLabel(dir: string): string {
  return basename(resolve(dir));
}

/** Reads and validates one base; never throws for what is in the files (see `problems`). */
export async function loadKnowledgeBase(dir: string): Promise<KbValidationResult> {
  return checkKbTexts(await readKbTexts(dir), kbLabel(dir));
}

/** Reads a base's rows without validating them (for tools that rewrite a base). */
export async function readKbDocument(dir: string): Promise<ParsedKb> {
  return parseKbTexts(await readKbTexts(dir), kbLabel(dir));
}

/** {@link loadKnowledgeBase}, throwing a KnowledgeBaseError that lists every problem. */
export async function loadKnowledgeBaseOrThrow(
  dir: string,
): Promise<{ knowledgeBase: KnowledgeBase; report: KbLoadReport }> {
  const result = await loadKnowledgeBase(dir);
  if (!result.ok) throw new KnowledgeBaseError(`knowledge base ${dir} is not valid`, result.problems);
  return { knowledgeBase: result.knowledgeBase, report: result.report };
}

export type KbSetLoadResult =
  | {
      readonly ok: true;
      readonly knowledgeBase: KnowledgeBase;
      readonly reports: readonly KbLoadReport[];
      readonly unified: readonly UnifiedFeature[];
      readonly problems: readonly [];
    }
  | {
      readonly ok: false;
      readonly knowledgeBase: null;
      readonly reports: readonly KbLoadReport[];
      readonly unified: readonly UnifiedFeature[];
      readonly problems: readonly KbProblem[];
    };

/**
 * Loads several bases and merges them (merge.ts): the problems of every base and of the merge
 * together. Labels are the directories' names, which must therefore differ.
 */
export async function loadKnowledgeBases(
  dirs: readonly string[],
  options: MergeOptions = {},
): Promise<KbSetLoadResult> {
  const results = await Promise.all(
    dirs.map(async (dir) => ({ label: kbLabel(dir), result: await loadKnowledgeBase(dir) })),
  );
  const problems = results.flatMap(({ result }) => result.problems);
  const reports = results.flatMap(({ result }) => (result.ok ? [result.report] : []));
  if (problems.length > 0)
    return { ok: false, knowledgeBase: null, reports, unified: [], problems: sortProblems(problems) };
  const merged = mergeKnowledgeBases(
    results.flatMap(({ label, result }) =>
      result.ok ? [{ label, knowledgeBase: result.knowledgeBase }] : [],
    ),
    options,
  );
  if (!merged.ok)
    return { ok: false, knowledgeBase: null, reports, unified: merged.unified, problems: merged.problems };
  return { ok: true, knowledgeBase: merged.knowledgeBase, reports, unified: merged.unified, problems: [] };
}

/**
 * Writes a document as a base directory (created if missing). Each file goes to a temporary name
 * first and is renamed into place, so a reader never sees half a file.
 */
export async function writeKbDocument(dir: string, doc: KbDocument): Promise<void> {
  await mkdir(dir, { recursive: true });
  const texts = serializeKbDocument(doc);
  for (const key of Object.keys(KB_FILES) as KbFileKey[]) {
    const path = join(dir, KB_FILES[key]);
    const tmp = `${path}.tmp-${process.pid}`;
    await writeFile(tmp, texts[key], 'utf8');
    await rename(tmp, path);
  }
}
