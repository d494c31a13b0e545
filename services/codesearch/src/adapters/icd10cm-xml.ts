import { readFile } from 'node:fs/promises';
import { XMLParser } from 'fast-xml-parser';
import type { CodeRecord } from '../schemas/code-record.js';

/**
 * The CMS ICD-10-CM tabular list (`icd10cm-tabular-*.xml`, U.S. public domain; shipped inside the
 * PyPI wheel of simple-icd-10-cm): every `<diag>` becomes a code with its description as
 * `title_en`, its inclusion terms and "includes" notes as synonyms and the enclosing `<diag>` as
 * parent. Seventh-character extensions (`<sevenChrDef>`, injuries and obstetrics) are not expanded
 * into codes of their own.
 */

interface Diag {
  name?: string;
  desc?: string;
  inclusionTerm?: { note?: string[] }[];
  includes?: { note?: string[] }[];
  diag?: Diag[];
}

interface Section {
  diag?: Diag[];
}

interface Chapter {
  section?: Section[];
}

const ARRAYS = new Set(['chapter', 'section', 'diag', 'note', 'inclusionTerm', 'includes']);

export async function readIcd10CmTabular(path: string): Promise<CodeRecord[]> {
  const xml = await readFile(path, 'utf8');
  return parseIcd10CmTabular(xml);
}

export function parseIcd10CmTabular(xml: string): CodeRecord[] {
  const parser = new XMLParser({
    ignoreAttributes: true,
    isArray: (name) => ARRAYS.has(name),
    parseTagValue: false,
    trimValues: true,
    stopNodes: [
      '*.excludes1',
      '*.excludes2',
      '*.codeFirst',
      '*.codeAlso',
      '*.useAdditionalCode',
      '*.notes',
      '*.sevenChrDef',
      '*.sevenChrNote',
      '*.introduction',
    ],
  });
  const doc = parser.parse(xml) as { 'ICD10CM.tabular'?: { chapter?: Chapter[] } };
  const chapters = doc['ICD10CM.tabular']?.chapter;
  if (chapters === undefined || chapters.length === 0)
    throw new Error('not an ICD-10-CM tabular file: no <ICD10CM.tabular><chapter> found');
  const out: CodeRecord[] = [];
  const walk = (diag: Diag, parent: string | null): void => {
    const code = (diag.name ?? '').trim();
    const title = (diag.desc ?? '').trim();
    if (code === '' || title === '') return;
    const synonyms = [...(diag.inclusionTerm ?? []), ...(diag.includes ?? [])]
      .flatMap((n) => n.note ?? [])
      .map((s) => s.trim())
      .filter((s) => s !== '' && s.toLowerCase() !== title.toLowerCase());
    out.push({
      code,
      type: 'ICD10',
      title_en: title,
      title_vi: null,
      synonyms: [...new Set(synonyms)],
      parent,
    });
    for (const child of diag.diag ?? []) walk(child, code);
  };
  for (const chapter of chapters)
    for (const section of chapter.section ?? []) for (const d of section.diag ?? []) walk(d, null);
  return out;
}
