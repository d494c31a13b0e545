/**
 * The parts of an OBO 1.2 ontology file (hp.obo) the HPO import needs (pure): each [Term]'s id,
 * name, definition, synonyms with their scope and type, alternative ids, obsolescence with
 * `replaced_by` / `consider`, and the header's data-version and licence.
 */

export const SYNONYM_SCOPES = ['EXACT', 'RELATED', 'BROAD', 'NARROW'] as const;
export type SynonymScope = (typeof SYNONYM_SCOPES)[number];

export interface OboSynonym {
  readonly text: string;
  readonly scope: SynonymScope;
  /** The synonym type (`layperson`, `abbreviation`, `uk_spelling`, `obsolete_synonym`…), if any. */
  readonly type: string | null;
}

export interface OboTerm {
  readonly id: string;
  readonly name: string;
  readonly definition: string | null;
  readonly synonyms: readonly OboSynonym[];
  readonly altIds: readonly string[];
  readonly obsolete: boolean;
  readonly replacedBy: string | null;
  readonly consider: readonly string[];
}

export interface OboOntology {
  /** `hp/releases/2025-01-16`. */
  readonly dataVersion: string | null;
  /** The header's `terms:license` or `license:` value. */
  readonly licence: string | null;
  readonly terms: ReadonlyMap<string, OboTerm>;
  /** alt_id → primary id. */
  readonly altIds: ReadonlyMap<string, string>;
}

/** A quoted OBO string at the start of `s`: its text (escapes undone) and what follows it. */
function quoted(s: string): { text: string; rest: string } | null {
  if (!s.startsWith('"')) return null;
  let text = '';
  for (let i = 1; i < s.length; i++) {
    const ch = s.charAt(i);
    if (ch === '\\' && i + 1 < s.length) {
      const next = s.charAt(++i);
      text += next === 'n' ? '\n' : next === 't' ? '\t' : next;
    } else if (ch === '"') {
      return { text, rest: s.slice(i + 1).trim() };
    } else {
      text += ch;
    }
  }
  return null;
}

/** Drops a trailing ` ! comment` (outside quotes, which the callers have already consumed). */
function bare(value: string): string {
  const bang = value.indexOf(' !');
  return (bang === -1 ? value : value.slice(0, bang)).trim();
}

interface MutableTerm {
  id: string;
  name: string;
  definition: string | null;
  synonyms: OboSynonym[];
  altIds: string[];
  obsolete: boolean;
  replacedBy: string | null;
  consider: string[];
}

export function parseObo(text: string): OboOntology {
  const terms = new Map<string, OboTerm>();
  const altIds = new Map<string, string>();
  let dataVersion: string | null = null;
  let licence: string | null = null;
  let stanza: string | null = null;
  let term: MutableTerm | null = null;
  const finish = () => {
    if (term !== null && term.id !== '') {
      terms.set(term.id, term);
      for (const alt of term.altIds) altIds.set(alt, term.id);
    }
    term = null;
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('!')) continue;
    if (line.startsWith('[') && line.endsWith(']')) {
      finish();
      stanza = line;
      if (stanza === '[Term]') {
        term = {
          id: '',
          name: '',
          definition: null,
          synonyms: [],
          altIds: [],
          obsolete: false,
          replacedBy: null,
          consider: [],
        };
      }
      continue;
    }
    const colon = line.indexOf(':');
    if (colon === -1) continue;
    const tag = line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    if (stanza === null) {
      if (tag === 'data-version') dataVersion = value;
      else if (tag === 'license') licence = bare(value);
      else if (tag === 'property_value' && /^(terms|dcterms|dc):license\s/.test(value)) {
        licence = value.split(/\s+/)[1] ?? null;
      }
      continue;
    }
    if (term === null) continue;
    const t: MutableTerm = term;
    switch (tag) {
      case 'id':
        t.id = value;
        break;
      case 'name':
        t.name = value;
        break;
      case 'def':
        t.definition = quoted(value)?.text ?? null;
        break;
      case 'synonym': {
        const q = quoted(value);
        if (q === null) break;
        const [scope, maybeType] = q.rest.split(/\s+/);
        if (!SYNONYM_SCOPES.includes(scope as SynonymScope)) break;
        const type = maybeType !== undefined && !maybeType.startsWith('[') ? maybeType : null;
        t.synonyms.push({ text: q.text, scope: scope as SynonymScope, type });
        break;
      }
      case 'alt_id':
        t.altIds.push(bare(value));
        break;
      case 'is_obsolete':
        t.obsolete = value === 'true';
        break;
      case 'replaced_by':
        t.replacedBy = bare(value);
        break;
      case 'consider':
        t.consider.push(bare(value));
        break;
      default:
        break;
    }
  }
  finish();
  return { dataVersion, licence, terms, altIds };
}

export interface ResolvedTerm {
  /** The live term, or null when the id is obsolete without a replacement or unknown. */
  readonly term: OboTerm | null;
  readonly via: 'current' | 'alt_id' | 'replaced_by' | 'obsolete' | 'unknown';
}

/** Follows alt_id and replaced_by (a few steps at most) to the live term an id stands for. */
export function resolveTerm(ontology: OboOntology, id: string): ResolvedTerm {
  let via: ResolvedTerm['via'] = 'current';
  let current = id;
  for (let step = 0; step < 8; step++) {
    const primary = ontology.altIds.get(current);
    if (primary !== undefined && !ontology.terms.has(current)) {
      current = primary;
      if (via === 'current') via = 'alt_id';
      continue;
    }
    const term = ontology.terms.get(current);
    if (term === undefined) return { term: null, via: 'unknown' };
    if (!term.obsolete) return { term, via };
    if (term.replacedBy === null) return { term: null, via: 'obsolete' };
    current = term.replacedBy;
    via = 'replaced_by';
  }
  return { term: null, via: 'obsolete' };
}
