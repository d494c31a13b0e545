/**
 * NegEx/ConText-style context for a finding's span, in Vietnamese (with or without diacritics) and
 * English. Pure.
 *
 * Cues are found once per text, longest first (so `không có` wins over `không`, `có thể` over `có`,
 * `cannot rule out` over `rule out`, and a pseudo-trigger such as `không rõ` or `no change` blocks
 * the trigger inside it). A trigger acts on a finding when the finding lies in its scope:
 * - forward triggers (`không`, `denies`, `nghi`, `possible`, `tiền sử`) reach ahead, backward ones
 *   (`âm tính`, `was ruled out`, a `?` after the term) reach back;
 * - a scope ends at a sentence end (`.` `;` `!` `?` or a line break that does not start a bullet),
 *   at a termination term (`nhưng`, `tuy nhiên`, `but`, `however`, …; some only end negation, such
 *   as `có` in "không sốt có ho"), and after `window` words;
 * - a comma ends a negation or uncertainty scope ("không sốt, ho nhiều": the cough is present)
 *   unless the trigger takes a list (`denies`, `negative for`, `phủ nhận`) or the clause is an
 *   "or" list ("không ho, sốt hay khó thở", "no fever, chills or sweats"); history and family
 *   scopes run over commas to the end of the sentence ("tiền sử THA, ĐTĐ").
 *
 * The cue words and their settings are data, in negation-cues.ts (`CUE_DEFINITIONS`, `CERTAINTY`);
 * this file finds them in a text and applies them to a finding's span, through the tables of
 * cue-index.ts (which cues reach a span, in O(log n) plus the cues near it).
 */
import { findTerm, keepLongest, possibleTerms, type Span } from './terms.js';
import { foldText, sourceRange, writtenMatches, type FoldedText } from './text.js';
import type { ExtractedFinding, FindingCue } from './types.js';
import { cueIndexOf, isScoped } from './cue-index.js';
import {
  ALL_SCOPES,
  CERTAINTY,
  CUE_DEFINITIONS,
  NEGATION_WINDOW,
  SENTENCE,
  type CueCategory,
  type CueDef,
  type CueDirection,
  type Scoped,
} from './negation-cues.js';

export { CERTAINTY, CUE_DEFINITIONS, type CueCategory, type CueDirection } from './negation-cues.js';

export interface Cue extends Span {
  readonly text: string;
  readonly category: CueCategory;
  readonly direction: CueDirection;
  /** Sets `present` to false (negation, and `unlikely`). */
  readonly negates: boolean;
  /** The certainty it leaves (1 for plain negation). */
  readonly certainty: number;
  /** Runs over commas (`denies fever, chills`). */
  readonly list: boolean;
  /** Most words between the cue and the finding. */
  readonly window: number;
  /** Nothing at all may stand between (`?pneumonia`). */
  readonly adjacent: boolean;
  /** Termination cues: the scopes they end. */
  readonly stops: readonly Scoped[];
}

/** "không ăn được", "không ngủ được": inability (a finding), not a negation. */
const INABILITY = /(?<![\p{L}\p{N}])khong(?: [\p{L}]+){1,3} duoc(?![\p{L}\p{N}])(?! \d)/gu;
/**
 * "a 2-week history of cough", "3 ngày nay": the present illness, not past history. A number is
 * read from its first digit (or its second, after a letter: "x12-day history" reads "2-day
 * history"), never from each of its digits in turn, which made a long run of digits quadratic.
 */
const ILLNESS_HISTORY =
  /(?:(?<![\p{L}])(?:one|two|three|four|five|six|seven|eight|nine|ten|several|a few|a)|(?:(?<![\p{L}\d])|(?<=\p{L}\d))\d+)[\s-](?:hours?|days?|weeks?|months?|years?)[\s-]history(?: of)?(?![\p{L}])|(?<![\p{L}])history of (?:the )?present illness(?![\p{L}])/gu;
/** "?viêm phổi": a question mark fixed to the word after it. */
const LEADING_QUESTION = /(?<![\p{L}\p{N}?])\?(?=\p{L})/gu;

function cueOf(def: CueDef, span: Span, text: string): Cue {
  const category = def.category;
  const negates = def.negates ?? category === 'negation';
  return {
    start: span.start,
    end: span.end,
    text,
    category,
    direction: def.direction ?? 'forward',
    negates,
    certainty: def.certainty ?? 1,
    list: def.list ?? false,
    window: def.window ?? (category === 'history' || category === 'family' ? SENTENCE : NEGATION_WINDOW),
    adjacent: def.adjacent ?? false,
    stops: def.stops ?? (category === 'termination' ? ALL_SCOPES : []),
  };
}

/** Every cue in the text, non-overlapping (longest wins), in text order. */
export function findCues(input: string | FoldedText, findings: readonly Span[] = []): Cue[] {
  const text = typeof input === 'string' ? foldText(input) : input;
  const candidates: Cue[] = [];
  // First, so that it wins over the plain `?` (a backward cue) on the same character.
  for (const m of text.folded.matchAll(LEADING_QUESTION)) {
    const range = sourceRange(text, m.index, m.index + 1);
    candidates.push(
      cueOf(
        { category: 'uncertainty', terms: [], certainty: CERTAINTY.possible, window: 0, adjacent: true },
        range,
        '?',
      ),
    );
  }
  const possible = possibleTerms(text);
  for (const def of CUE_DEFINITIONS) {
    for (const term of def.terms) {
      if (!possible(term)) continue;
      for (const at of findTerm(text, term))
        candidates.push(cueOf(def, at, text.source.slice(at.start, at.end)));
    }
  }
  for (const m of text.folded.matchAll(INABILITY)) {
    const range = sourceRange(text, m.index, m.index + m[0].length);
    const written = text.source.slice(range.start, range.end);
    const words = written.split(/\s+/u);
    if (!writtenMatches('không', words[0] ?? '') || !writtenMatches('được', words[words.length - 1] ?? ''))
      continue;
    candidates.push(cueOf({ category: 'pseudo', terms: [] }, range, written));
  }
  for (const m of text.folded.matchAll(ILLNESS_HISTORY)) {
    const range = sourceRange(text, m.index, m.index + m[0].length);
    candidates.push(
      cueOf({ category: 'pseudo', terms: [] }, range, text.source.slice(range.start, range.end)),
    );
  }
  // A pseudo-trigger that runs into a finding's words is not one: in "không giảm tiểu cầu" the
  // "giảm" belongs to "giảm tiểu cầu" (thrombocytopenia), so "không" negates it.
  const kept = candidates.filter(
    (c) =>
      c.category !== 'pseudo' ||
      !findings.some((f) => c.start < f.start && f.start < c.end && c.end <= f.end),
  );
  return keepLongest(kept);
}

export interface FindingContext {
  readonly present: boolean;
  readonly certainty: number;
  /** In a history scope ("tiền sử", "history of"): the finding is past history. */
  readonly historical: boolean;
  /** In a family scope ("mẹ bị", "family history of"): the finding is a relative's. */
  readonly family: boolean;
  /** The cues that act on the finding. */
  readonly cues: readonly FindingCue[];
}

/**
 * The context of the finding at `span`: negated, hedged, historical, a relative's. `cues` may be
 * passed when several spans of one text are analysed (`findCues(text)`, computed once; the tables
 * built from them are then kept with that array, see `CueIndex`).
 */
export function contextOf(
  source: string,
  span: Span,
  cues: readonly Cue[] = findCues(source),
  options: { readonly named?: boolean } = {},
): FindingContext {
  const index = cueIndexOf(source, cues);
  let present = true;
  let certainty: number = CERTAINTY.stated;
  let historical = false;
  let family = false;
  const acting: FindingCue[] = [];
  const reaching = [...index.reaching(span)];
  // `named`: a cue that runs into the term's first words ("không bị" before "bị sốt", "no history
  // of" before "history of smoking") stands before the finding as a whole, so it acts on it.
  if (options.named === true) {
    for (const cue of cues) {
      if (!isScoped(cue) || reaching.includes(cue)) continue;
      if (cue.start < span.start && cue.end > span.start && cue.end <= span.end) reaching.push(cue);
    }
  }
  for (const cue of reaching) {
    // `named`: the span is a term of the lexicon, so a cue within it is part of the finding's name
    // ("không muốn ăn", anorexia; "nốt" written "not" without diacritics), not its context. An LLM's
    // span may start with its trigger ("không sốt"): there the cue counts.
    if (options.named === true && cue.start >= span.start && cue.end <= span.end) continue;
    switch (cue.category) {
      case 'negation':
        present = false;
        certainty = Math.min(certainty, cue.certainty);
        break;
      case 'uncertainty':
        certainty = Math.min(certainty, cue.certainty);
        break;
      case 'history':
        historical = true;
        break;
      case 'family':
        family = true;
        break;
    }
    acting.push({ role: cue.category, text: cue.text, start: cue.start, end: cue.end });
  }
  return { present, certainty, historical, family, cues: acting };
}

export interface PlacedFinding {
  readonly finding: ExtractedFinding;
  /** A relative's finding: keep it out of the patient's. */
  readonly family: boolean;
}

/**
 * A finding with its context applied: negation and uncertainty set `present` and `certainty`
 * unless `trustFinding` (an LLM finding that already marked them); a history scope turns a
 * symptom or sign into kind `history`; a family scope marks it as a relative's.
 */
export function applyContext(
  source: string,
  finding: ExtractedFinding,
  cues: readonly Cue[],
  options: { readonly trustFinding: boolean; readonly named?: boolean },
): PlacedFinding {
  const ctx = contextOf(source, finding, cues, { named: options.named === true });
  const acting = options.trustFinding
    ? ctx.cues.filter((c) => c.role === 'history' || c.role === 'family')
    : ctx.cues;
  const kind =
    ctx.historical && (finding.kind === 'symptom' || finding.kind === 'sign') ? 'history' : finding.kind;
  const placed: ExtractedFinding = {
    ...finding,
    kind,
    ...(options.trustFinding ? {} : { present: ctx.present, certainty: ctx.certainty }),
    ...(acting.length === 0 ? {} : { cues: acting }),
  };
  return { finding: placed, family: ctx.family };
}
