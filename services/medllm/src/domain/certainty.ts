/**
 * The certainty guard: a response must not claim more certainty than the model stated from its
 * input. It looks for the model's own expressions of certainty in the reply: epistemic words
 * ("definitely", "without a doubt", "chắc chắn" …), first-person certainty ("I am certain", "100%
 * sure") and conclusions the model draws from what it sees ("this confirms", "these findings rule
 * out", "the appearance is diagnostic of"). A phrase is left alone when it is negated ("cannot be
 * certain", "không chắc chắn"), already hedged ("almost certainly"), or when the same phrase is in
 * the prompt (the model is echoing the clinician's words). Any other occurrence is, in `rewrite`
 * mode, replaced by a hedged equivalent ("definitely" → "likely"), in `flag` mode only reported;
 * either way it is counted and listed in the response's `clinical_guard`.
 *
 * It never touches a measurement or a reported fact: a bare "100%" (an oxygen saturation, an
 * opacified lung, a sensitivity) is a number, and a claim attributed to a test, a person or the past
 * ("fracture confirmed by CT", "the biopsy confirms", "a normal D-dimer rules out", "was
 * definitively diagnosed") is what the record says, not the model's certainty. It adds no clinical
 * content: it only swaps the strength words of what the model said.
 */

export type GuardMode = 'rewrite' | 'flag' | 'off';

interface Rule {
  readonly pattern: RegExp;
  /** The hedged replacement, keeping the phrase's role in the sentence. */
  readonly hedge: string | ((phrase: string) => string);
  /**
   * The text before the phrase must end like this: for words that are the model's certainty only
   * with the model as the one concluding ("this confirms", "I am sure").
   */
  readonly after?: RegExp;
  /** Not when the text after the phrase starts like this (a report: "definitively diagnosed by"). */
  readonly notBefore?: RegExp;
}

/**
 * Subjects that make a claim verb the model's own conclusion: "this", "it" or what it is looking
 * at. A test, a person or a result named in the record ("CT last week", "the biopsy", "a normal
 * D-dimer", "the radiologist") does not match, nor does a relative pronoun ("tests that confirm"),
 * so their claims are left as reported.
 */
const CONCLUDER =
  /(?<!\p{L})(?:this|these|it|findings?|appearances?|features?|signs?|pattern|picture|presentation|images?|films?|radiographs?|x-?rays?|scans?|ct|mri|ultrasound|photo(?:graph)?s?)(?:\s+\p{L}+ly)?\s+$/iu;
const CONCLUDER_VI = /(?<!\p{L})(?:tôi|ta|này|đó|nó|hình ảnh|phim|ảnh|dấu hiệu|phát hiện|có thể)\s+$/iu;
/** The model speaking of itself: "I am certain", "we're sure". */
const FIRST_PERSON = /(?<!\p{L})(?:I am|I['’]m|we are|we['’]re|I feel|I remain)\s+$/iu;
/** A past participle or an agent after the adverb: how something was established, a report. */
const REPORTED = /^\s+(?:\p{L}+ed|shown|proven|seen|made|done|by|on|at)(?!\p{L})/iu;
/** Vietnamese report markers after "khẳng định": "bằng CT", "qua sinh thiết", "bởi bác sĩ". */
const REPORTED_VI = /^\s+(?:bằng|qua|bởi)(?!\p{L})/iu;

/** "confirms" → "is …", "confirm" → "are …" (the verb agrees with the subject it keeps). */
const agreeing =
  (singular: string, plural: string) =>
  (phrase: string): string =>
    /^(?:confirms|rules|is)\b/iu.test(phrase) ? singular : plural;

// Longest first, so "is definitely" is not half-taken by "definitely".
const RULES: readonly Rule[] = [
  { pattern: /\bwithout (?:any |a )?doubt\b/giu, hedge: 'most likely' },
  { pattern: /\bbeyond (?:any |a |all )?(?:reasonable )?doubt\b/giu, hedge: 'most likely' },
  { pattern: /\bthere is no doubt(?: that)?\b/giu, hedge: 'it is likely that' },
  {
    pattern:
      /\b(?:(?:absolutely|completely|totally|entirely|quite|very|100\s?%|100 percent|one hundred percent)\s+)?(?:certain|sure|confident)\b/giu,
    hedge: 'fairly confident',
    after: FIRST_PERSON,
  },
  {
    pattern:
      /(?:\b(?:absolutely|completely|totally|entirely)|\b100\s?%|\b100 percent|\bone hundred percent)\s+(?:certain|sure|confident)\b/giu,
    hedge: 'fairly certain',
  },
  {
    pattern: /\b(?:is|are) diagnostic of\b/giu,
    hedge: agreeing('is suggestive of', 'are suggestive of'),
    after: CONCLUDER,
  },
  {
    pattern: /\bconfirms? the diagnosis(?: of\b)?/giu,
    hedge: (phrase) =>
      `${agreeing('is', 'are')(phrase)} consistent with the diagnosis${/ of$/iu.test(phrase) ? ' of' : ''}`,
    after: CONCLUDER,
  },
  {
    pattern: /\bconfirms?\b/giu,
    hedge: agreeing('is consistent with', 'are consistent with'),
    after: CONCLUDER,
  },
  {
    pattern: /\brules? out\b/giu,
    hedge: agreeing('makes less likely', 'make less likely'),
    after: CONCLUDER,
  },
  { pattern: /\bdefinitively\b/giu, hedge: 'probably', notBefore: REPORTED },
  { pattern: /\bdefinitely\b/giu, hedge: 'likely' },
  { pattern: /\bcertainly\b/giu, hedge: 'likely' },
  { pattern: /\bundoubtedly\b/giu, hedge: 'likely' },
  { pattern: /\bunquestionably\b/giu, hedge: 'likely' },
  { pattern: /\bconclusively\b/giu, hedge: 'probably', notBefore: REPORTED },
  { pattern: /\bunequivocally\b/giu, hedge: 'probably' },
  { pattern: /\bguaranteed\b/giu, hedge: 'likely' },
  { pattern: /(?<![\p{L}])chắc chắn(?![\p{L}])/giu, hedge: 'có khả năng' },
  {
    pattern: /(?<![\p{L}])khẳng định(?![\p{L}])/giu,
    hedge: 'gợi ý',
    after: CONCLUDER_VI,
    notBefore: REPORTED_VI,
  },
  { pattern: /(?<![\p{L}])không nghi ngờ gì(?: nữa)?(?![\p{L}])/giu, hedge: 'nhiều khả năng' },
];

/**
 * The longest text a phrase can take: the stream keeps this much back until it knows more. It is
 * also how far after a phrase the guard looks (`notBefore`).
 */
export const MAX_PHRASE_CHARS = 40;
/** How much of the text before a phrase the guard looks at (negation, `after`). */
const CONTEXT_CHARS = 60;

const NEGATION =
  /(?:\b(?:not|cannot|can't|can not|never|no|nor|hardly|unable to|impossible to)\s+(?:be\s+|been\s+|say\s+|yet\s+)?|(?:không|chưa|chẳng)\s+(?:thể\s+)?)$/iu;
/** Already hedged: "almost certainly", "nearly definitely". */
const HEDGED = /\b(?:almost|nearly|virtually|practically)\s+$/iu;

export interface CertaintyFinding {
  readonly phrase: string;
  /** The hedge put in its place; null in `flag` mode. */
  readonly replacement: string | null;
}

interface Match {
  readonly start: number;
  readonly end: number;
  readonly rule: Rule;
  /** False for a phrase that is negated, hedged or echoed from the prompt: kept as written. */
  readonly hedged: boolean;
}

/** Every raw occurrence of any rule's phrase in `text` from `from` on, whatever its context. */
function candidates(text: string, from: number): { start: number; end: number }[] {
  return RULES.flatMap((rule) =>
    Array.from(text.matchAll(rule.pattern), (m) => ({ start: m.index, end: m.index + m[0].length })),
  ).filter((m) => m.start >= from);
}

/**
 * The phrases of `text` from `from` on that are the model's certainty (`text` starts with what came
 * before, so word boundaries and the context checks see it). Decided on the original text only, so
 * the result does not depend on how the stream was cut.
 */
function findMatches(text: string, from: number, prompt: string): Match[] {
  const found: Match[] = [];
  for (const rule of RULES) {
    for (const m of text.matchAll(rule.pattern)) {
      const start = m.index;
      const end = start + m[0].length;
      if (start < from) continue;
      if (found.some((f) => start < f.end && end > f.start)) continue; // a longer rule took it
      const preceding = text.slice(Math.max(0, start - CONTEXT_CHARS), start);
      if (rule.after !== undefined && !rule.after.test(preceding)) continue; // not the model's claim
      if (rule.notBefore?.test(text.slice(end, end + MAX_PHRASE_CHARS))) continue; // a report
      const kept =
        NEGATION.test(preceding.slice(-40)) || HEDGED.test(preceding) || prompt.includes(m[0].toLowerCase());
      found.push({ start, end, rule, hedged: !kept });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

function keepCase(original: string, hedge: string): string {
  const first = original.charAt(0);
  if (first !== first.toLowerCase()) return hedge.charAt(0).toUpperCase() + hedge.slice(1);
  return hedge;
}

/**
 * Checks a reply as it streams: `push` returns the text that can be sent now (a tail that may be
 * the start of a phrase, or the words after one, is held back), `flush` the rest. For a whole
 * reply: `push` then `flush`.
 */
export class CertaintyGuard {
  readonly findings: CertaintyFinding[] = [];
  private pending = '';
  /** The end of the original text already sent: word boundaries and the checks before a phrase. */
  private seenTail = '';
  private readonly prompt: string;

  constructor(
    readonly mode: GuardMode,
    promptText: string,
  ) {
    this.prompt = promptText.toLowerCase();
  }

  push(fragment: string): string {
    if (this.mode === 'off') return fragment;
    this.pending += fragment;
    const base = this.seenTail.length;
    let cut = this.pending.length - MAX_PHRASE_CHARS;
    if (cut <= 0) return '';
    // Never split a phrase: cut before any occurrence that reaches past the cut, so every phrase
    // is decided with the whole of it and MAX_PHRASE_CHARS of what follows it in view.
    const found = candidates(this.seenTail + this.pending, base);
    for (let moved = true; moved;) {
      moved = false;
      for (const m of found) {
        if (m.start < base + cut && m.end > base + cut) {
          cut = m.start - base;
          moved = true;
        }
      }
    }
    return this.emit(cut);
  }

  flush(): string {
    if (this.mode === 'off') return '';
    return this.emit(this.pending.length);
  }

  private emit(cut: number): string {
    const text = this.seenTail + this.pending;
    const base = this.seenTail.length;
    const end = base + cut;
    let out = '';
    let at = base;
    for (const m of findMatches(text, base, this.prompt)) {
      if (m.end > end) break;
      const phrase = text.slice(m.start, m.end);
      out += text.slice(at, m.start);
      at = m.end;
      if (!m.hedged) {
        out += phrase;
      } else if (this.mode === 'rewrite') {
        const hedge = typeof m.rule.hedge === 'string' ? m.rule.hedge : m.rule.hedge(phrase);
        const replacement = keepCase(phrase, hedge);
        this.findings.push({ phrase, replacement });
        out += replacement;
      } else {
        this.findings.push({ phrase, replacement: null });
        out += phrase;
      }
    }
    out += text.slice(at, end);
    this.seenTail = text.slice(0, end).slice(-CONTEXT_CHARS);
    this.pending = this.pending.slice(cut);
    return out;
  }
}

/** Checks a whole reply at once. */
export function guardText(
  mode: GuardMode,
  promptText: string,
  text: string,
): { text: string; findings: CertaintyFinding[] } {
  const guard = new CertaintyGuard(mode, promptText);
  const out = guard.push(text) + guard.flush();
  return { text: out, findings: guard.findings };
}
