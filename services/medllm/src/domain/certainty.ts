/**
 * The certainty guard: a response must not claim more certainty than the model stated from its
 * input. It looks for unhedged certainty phrases ("definitely", "confirms the diagnosis",
 * "without a doubt", "chắc chắn" …) in the reply. A phrase is left alone when it is negated
 * ("cannot be certain", "không chắc chắn") or when the same phrase is in the prompt (the model is
 * echoing the clinician's words). Any other occurrence is, in `rewrite` mode, replaced by a hedged
 * equivalent ("definitely" → "likely"), in `flag` mode only reported; either way it is counted and
 * listed in the response's `clinical_guard`. It adds no clinical content: it only swaps the
 * strength words of what the model said.
 */

export type GuardMode = 'rewrite' | 'flag' | 'off';

interface Rule {
  readonly pattern: RegExp;
  /** The hedged replacement, keeping the phrase's role in the sentence. */
  readonly hedge: string;
}

// Longest first, so "is definitely" is not half-taken by "definitely".
const RULES: readonly Rule[] = [
  { pattern: /\bwithout (?:any |a )?doubt\b/giu, hedge: 'most likely' },
  { pattern: /\bbeyond (?:any |a )?doubt\b/giu, hedge: 'most likely' },
  { pattern: /\bthere is no doubt(?: that)?\b/giu, hedge: 'it is likely that' },
  { pattern: /\b(?:is|are) diagnostic of\b/giu, hedge: 'is suggestive of' },
  { pattern: /\bconfirms? the diagnosis(?: of)?\b/giu, hedge: 'is consistent with the diagnosis of' },
  { pattern: /\bconfirms\b/giu, hedge: 'is consistent with' },
  { pattern: /\bconfirmed\b/giu, hedge: 'suggested' },
  { pattern: /\brules? out\b/giu, hedge: 'makes less likely' },
  { pattern: /\b100\s?% (?:certain|sure)\b/giu, hedge: 'fairly confident' },
  { pattern: /\b100\s?%/gu, hedge: 'highly' },
  { pattern: /\bdefinitively\b/giu, hedge: 'probably' },
  { pattern: /\bdefinitely\b/giu, hedge: 'likely' },
  { pattern: /\bcertainly\b/giu, hedge: 'likely' },
  { pattern: /\bundoubtedly\b/giu, hedge: 'likely' },
  { pattern: /\bconclusively\b/giu, hedge: 'probably' },
  { pattern: /\bunequivocally\b/giu, hedge: 'probably' },
  { pattern: /\bguaranteed\b/giu, hedge: 'likely' },
  { pattern: /(?<![\p{L}])chắc chắn(?![\p{L}])/giu, hedge: 'có khả năng' },
  { pattern: /(?<![\p{L}])khẳng định(?![\p{L}])/giu, hedge: 'gợi ý' },
  { pattern: /(?<![\p{L}])không nghi ngờ gì(?: nữa)?(?![\p{L}])/giu, hedge: 'nhiều khả năng' },
];

/** The longest text a phrase can take: the stream keeps this much back until it knows more. */
export const MAX_PHRASE_CHARS = 40;

const NEGATION =
  /(?:\b(?:not|cannot|can't|can not|never|no|nor|hardly|unable to|impossible to)\s+(?:be\s+|been\s+|say\s+|yet\s+)?|(?:không|chưa|chẳng)\s+(?:thể\s+)?)$/iu;

export interface CertaintyFinding {
  readonly phrase: string;
  /** The hedge put in its place; null in `flag` mode. */
  readonly replacement: string | null;
}

interface Match {
  readonly start: number;
  readonly end: number;
  readonly rule: Rule;
}

function findMatches(text: string): Match[] {
  const found: Match[] = [];
  for (const rule of RULES) {
    rule.pattern.lastIndex = 0;
    for (const m of text.matchAll(rule.pattern)) {
      const start = m.index;
      const end = start + m[0].length;
      if (found.some((f) => start < f.end && end > f.start)) continue; // a longer rule took it
      found.push({ start, end, rule });
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
 * the start of a phrase is held back), `flush` the rest. For a whole reply: `push` then `flush`.
 */
export class CertaintyGuard {
  readonly findings: CertaintyFinding[] = [];
  private pending = '';
  /** The end of what was already sent, for the negation check. */
  private sentTail = '';
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
    let cut = this.pending.length - MAX_PHRASE_CHARS;
    if (cut <= 0) return '';
    // Never split a phrase: cut before any match that reaches past the cut.
    for (const m of findMatches(this.pending)) if (m.start < cut && m.end > cut) cut = m.start;
    return this.emit(cut);
  }

  flush(): string {
    if (this.mode === 'off') return '';
    return this.emit(this.pending.length);
  }

  private emit(cut: number): string {
    const segment = this.pending.slice(0, cut);
    this.pending = this.pending.slice(cut);
    let out = '';
    let at = 0;
    for (const m of findMatches(segment)) {
      const before = this.sentTail + out + segment.slice(at, m.start);
      const phrase = segment.slice(m.start, m.end);
      out += segment.slice(at, m.start);
      at = m.end;
      const negated = NEGATION.test(before.slice(-40));
      if (negated || this.prompt.includes(phrase.toLowerCase())) {
        out += phrase;
        continue;
      }
      if (this.mode === 'rewrite') {
        const replacement = keepCase(phrase, m.rule.hedge);
        this.findings.push({ phrase, replacement });
        out += replacement;
      } else {
        this.findings.push({ phrase, replacement: null });
        out += phrase;
      }
    }
    out += segment.slice(at);
    this.sentTail = (this.sentTail + out).slice(-MAX_PHRASE_CHARS);
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
