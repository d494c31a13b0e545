/**
 * The HPO disease annotation file, phenotype.hpoa (pure): `#key: value` header lines, then a
 * tab-separated table whose first row names the columns (database_id, disease_name, qualifier,
 * hpo_id, reference, evidence, onset, frequency, sex, modifier, aspect, biocuration).
 */

export const HPOA_COLUMNS = [
  'database_id',
  'disease_name',
  'qualifier',
  'hpo_id',
  'reference',
  'evidence',
  'onset',
  'frequency',
  'sex',
  'modifier',
  'aspect',
  'biocuration',
] as const;

export interface HpoaRow {
  readonly line: number;
  /** `OMIM:143100`, `ORPHA:558`, `DECIPHER:1`. */
  readonly databaseId: string;
  readonly diseaseName: string;
  /** True for the qualifier `NOT`: the feature is stated to be absent in the disease. */
  readonly negated: boolean;
  readonly hpoId: string;
  /** Where the annotation comes from (`PMID:31675180`, `OMIM:619340`); `;`-separated when several. */
  readonly reference: string;
  readonly evidence: string;
  /** As given: `7/13`, `25%`, an HPO frequency term, or empty. */
  readonly frequency: string;
  /** `MALE`, `FEMALE` or empty. */
  readonly sex: string;
  /** P phenotypic abnormality, I inheritance, C clinical course, M modifier, H past medical history. */
  readonly aspect: string;
}

export interface HpoaFile {
  /** The `#key: value` lines (`description`, `version`, `hpo-version`…). */
  readonly header: Readonly<Record<string, string>>;
  readonly rows: readonly HpoaRow[];
  readonly problems: readonly { readonly line: number; readonly message: string }[];
}

export function parseHpoa(text: string): HpoaFile {
  const header: Record<string, string> = {};
  const rows: HpoaRow[] = [];
  const problems: { line: number; message: string }[] = [];
  let columns: string[] | null = null;
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    if (raw.trim() === '') continue;
    if (raw.startsWith('#') && columns === null) {
      // The name up to the first colon, trimmed below (blanks then a name could split two ways).
      const m = /^#([^:]+):\s?(.*)$/.exec(raw);
      if (m?.[1] !== undefined) header[m[1].trim()] = (m[2] ?? '').trim();
      continue;
    }
    const cells = raw.split('\t');
    if (columns === null) {
      const names = cells.map((c) => c.replace(/^#/, '').trim());
      const missing = HPOA_COLUMNS.filter((c) => !names.includes(c));
      if (missing.length > 0) problems.push({ line, message: `header lacks ${missing.join(', ')}` });
      columns = missing.length > 0 ? [] : names;
      continue;
    }
    if (columns.length === 0) continue;
    if (cells.length !== columns.length) {
      problems.push({ line, message: `${cells.length} fields where the header has ${columns.length}` });
      continue;
    }
    const at = columns;
    const cell = (name: (typeof HPOA_COLUMNS)[number]): string => (cells[at.indexOf(name)] ?? '').trim();
    const qualifier = cell('qualifier');
    if (qualifier !== '' && qualifier !== 'NOT') {
      problems.push({ line, message: `unknown qualifier "${qualifier}"` });
      continue;
    }
    rows.push({
      line,
      databaseId: cell('database_id'),
      diseaseName: cell('disease_name'),
      negated: qualifier === 'NOT',
      hpoId: cell('hpo_id'),
      reference: cell('reference'),
      evidence: cell('evidence'),
      frequency: cell('frequency'),
      sex: cell('sex'),
      aspect: cell('aspect'),
    });
  }
  if (columns === null) problems.push({ line: lines.length, message: 'no header row (database_id, …)' });
  return { header, rows, problems };
}
