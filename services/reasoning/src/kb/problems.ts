/** What can be wrong in a knowledge base, and where: every problem names its file and row. */

export const KB_PROBLEM_CODES = [
  /** A required file is missing or unreadable. */
  'file-missing',
  /** kb.json is not JSON or not the manifest's shape. */
  'bad-manifest',
  /** A CSV header lacks a required column, repeats one or has an unknown one. */
  'bad-header',
  /** A CSV row has the wrong number of cells or broken quoting. */
  'bad-row',
  /** A cell is not what its column holds (not a number, not an id, not a feature kind…). */
  'bad-value',
  /** A number (prior, probability, leak) without a source. */
  'missing-source',
  /** A source (or locator) without the number it would be the source of. */
  'missing-number',
  /** A source id that kb.json does not list. */
  'unknown-source',
  /** A probability, prior or leak outside the open interval (0, 1). */
  'probability-range',
  /** The priors of the scorable conditions add up to 1 or more. */
  'prior-sum',
  /** The same id twice (source, condition, feature) or the same link twice. */
  'duplicate-id',
  /** Two features for one HPO term. */
  'duplicate-hpo',
  /** A link to a condition that conditions.csv does not define. */
  'unknown-condition',
  /** A link to a feature that features.csv does not define. */
  'unknown-feature',
  /** An ICD-10 code that is not written as one (`A15.0`), or an HPO id that is not `HP:` + 7 digits. */
  'malformed-code',
  /** Scorable conditions but no leak in kb.json. */
  'leak-missing',
  /** Merging: the same id in two bases meaning different things. */
  'id-clash',
] as const;
export type KbProblemCode = (typeof KB_PROBLEM_CODES)[number];

export interface KbProblem {
  /** The file, prefixed with the base's directory name when known (`primary-care/links.csv`). */
  readonly file: string;
  /** 1-based line in the file (the header is line 1); null for the file as a whole. */
  readonly row: number | null;
  /** The CSV column or the JSON path (`sources[2].id`); null when the whole row or file is meant. */
  readonly column: string | null;
  readonly code: KbProblemCode;
  readonly message: string;
}

/** `primary-care/links.csv:12 [probability] probability-range: …`, one problem a line. */
export function formatProblem(p: KbProblem): string {
  const where = `${p.file}${p.row === null ? '' : `:${p.row}`}${p.column === null ? '' : ` [${p.column}]`}`;
  return `${where} ${p.code}: ${p.message}`;
}

/** Thrown by the loaders' *OrThrow forms; `problems` holds them all. */
export class KnowledgeBaseError extends Error {
  constructor(
    message: string,
    readonly problems: readonly KbProblem[],
  ) {
    super(`${message}\n${problems.map(formatProblem).join('\n')}`);
    this.name = 'KnowledgeBaseError';
  }
}
