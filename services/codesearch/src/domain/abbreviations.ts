import { fold } from './fold.js';

/**
 * Medical abbreviations, Vietnamese and English (THA = tăng huyết áp, HTN = hypertension…): a query
 * token that is one of them also searches for its expansions. The table is data
 * (`data/abbreviations.csv`); this module only looks things up.
 */

export interface Abbreviation {
  /** As written in the table, e.g. `ĐTĐ`. */
  readonly abbreviation: string;
  readonly expansions: readonly { readonly lang: 'vi' | 'en'; readonly text: string }[];
}

export class AbbreviationTable {
  private readonly byFolded = new Map<string, Abbreviation>();

  constructor(entries: readonly Abbreviation[]) {
    for (const entry of entries) {
      const key = fold(entry.abbreviation).replace(/[^a-z0-9]/g, '');
      const known = this.byFolded.get(key);
      this.byFolded.set(key, {
        abbreviation: known?.abbreviation ?? entry.abbreviation,
        expansions: [...(known?.expansions ?? []), ...entry.expansions],
      });
    }
  }

  get size(): number {
    return this.byFolded.size;
  }

  lookup(foldedToken: string): Abbreviation | undefined {
    return this.byFolded.get(foldedToken);
  }
}

/** Parses `abbreviation,lang,expansion` lines (a header first; `#` comments). */
export function parseAbbreviationsCsv(text: string): Abbreviation[] {
  const out: Abbreviation[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    if (i === 0 || line.trim() === '' || line.startsWith('#')) return;
    const [abbreviation, lang, ...rest] = line.split(',');
    const expansion = rest.join(',').trim();
    if (abbreviation === undefined || (lang !== 'vi' && lang !== 'en') || expansion === '') {
      throw new Error(`abbreviations line ${i + 1}: expected "abbreviation,vi|en,expansion"`);
    }
    out.push({ abbreviation: abbreviation.trim(), expansions: [{ lang, text: expansion }] });
  });
  return out;
}
