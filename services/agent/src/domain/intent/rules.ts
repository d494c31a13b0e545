import { CONCRETE_INTENTS, type ConcreteIntent } from '../types.js';
import { FEATURES, PATTERNS, type Feature, type PatternSpec } from './patterns.js';

/**
 * The fast rule layer of intent detection: weighted keyword patterns (patterns.ts) over the message,
 * in Vietnamese (with or without diacritics) and English. Pure: no I/O, no clock; tens of
 * microseconds per message.
 */

export interface AttachmentHints {
  readonly audio?: boolean;
  readonly image?: boolean;
}

export interface RuleMatch {
  readonly intent: ConcreteIntent;
  /** 0..1: how strong the best intent's evidence is and how far ahead of the runner-up it is. */
  readonly confidence: number;
  /** Names of the patterns that spoke for the intent (never message text). */
  readonly matched: readonly string[];
}

/** Everything the rules saw: the classifier uses the candidates and the runner-up. */
export interface RuleScores {
  /** The best guess, or null when nothing matched. */
  readonly best: RuleMatch | null;
  /** The intents still possible given the attachments (all 13 without attachments). */
  readonly candidates: readonly ConcreteIntent[];
  /** Score per candidate intent (0 where nothing matched), in `candidates` order. */
  readonly scores: readonly number[];
}

/** Characters of a long message the rules look at: its head and its tail (stack traces end there). */
export const RULES_HEAD_CHARS = 4000;
export const RULES_TAIL_CHARS = 1000;

/**
 * With a picture attached, the text chooses among these (the first is the default): read it, find
 * faces, or work on the text read from it (analyse, summarise, translate, look up its codes).
 */
export const IMAGE_INTENTS: readonly ConcreteIntent[] = [
  'ocr',
  'face_recognize',
  'analyze',
  'summarize',
  'translate',
  'search_code',
];
/** With an audio file attached, the text chooses among these (the first is the default). */
export const AUDIO_INTENTS: readonly ConcreteIntent[] = [
  'transcribe',
  'analyze',
  'summarize',
  'translate',
  'search_code',
];

/** Weight of an attachment's default intent before the text is read. */
const ATTACHMENT_PRIOR = 1;

const MARKS = /[\u0300-\u036f]/g;

/** Vietnamese diacritics removed, case kept: NFD, combining marks stripped, đ/Đ -> d/D. */
function stripMarks(text: string): string {
  return text.normalize('NFD').replace(MARKS, '').replace(/đ/g, 'd').replace(/Đ/g, 'D');
}

/** Lower case without Vietnamese diacritics: "Dịch sang tiếng Anh" -> "dich sang tieng anh". */
export function foldText(text: string): string {
  return stripMarks(text.toLowerCase());
}

const UNICODE_BOUNDARY =
  '(?:(?<=[\\p{L}\\p{N}_])(?![\\p{L}\\p{N}_])|(?<![\\p{L}\\p{N}_])(?=[\\p{L}\\p{N}_]))';

/**
 * A strict source: each accented letter accepts itself or its bare letter, `\b` becomes a Unicode
 * word boundary. Matched against the lower-case NFC message.
 */
function compileStrict(source: string): RegExp {
  // Sources are BMP text: one UTF-16 unit per character.
  const nfc = source.normalize('NFC');
  let out = '';
  for (let i = 0; i < nfc.length; i++) {
    const ch = nfc.charAt(i);
    if (ch === '\\') {
      const next = nfc.charAt(++i);
      out += next === 'b' ? UNICODE_BOUNDARY : `\\${next}`;
      continue;
    }
    const bare = stripMarks(ch);
    out += bare !== ch && bare.length === 1 ? `[${ch}${bare}]` : ch;
  }
  return new RegExp(out, 'u');
}

/**
 * A source compiled twice. `bare` is its folded form, matched against the folded message; for a
 * strict source `marked` is its strict form, matched against the lower-case message with its
 * diacritics. A strict source matches where both forms match: the folded form first (a plain ASCII
 * regex, fast, and on a message without diacritics the two forms mean the same), the strict form
 * (Unicode boundaries, several times slower) only then.
 */
interface Compiled {
  readonly marked: RegExp;
  readonly bare: RegExp;
  /** Tested against the lower-case text with diacritics (else the folded text). */
  readonly strict: boolean;
}

interface CompiledPattern {
  readonly spec: PatternSpec;
  /** null: always matches (a pattern made only of feature requirements). */
  readonly re: Compiled | null;
}

interface CompiledFeature {
  readonly feature: Feature;
  readonly re: Compiled;
}

function compile(source: string, strict: boolean): Compiled {
  // Sources are lower case already; folding them must keep `\\S`, `\\W`... as they are.
  const bare = new RegExp(stripMarks(source), source.includes('\\p{') ? 'u' : '');
  return { marked: strict ? compileStrict(source) : bare, bare, strict };
}

const COMPILED_FEATURES: readonly CompiledFeature[] = FEATURES.map((f) => ({
  feature: f.feature,
  re: compile(f.source, f.strict === true),
}));

const COMPILED_PATTERNS: readonly CompiledPattern[] = PATTERNS.map((spec) => ({
  spec,
  re: spec.source === '' ? null : compile(spec.source, spec.strict === true),
}));

/**
 * Runs every compiled pattern on a short text of one-byte characters and on one of two-byte
 * characters. V8 compiles a regex for each kind of string on its first runs, which would otherwise
 * fall on the first messages after start (with `strict` forms, on the first with diacritics).
 */
function warmUp(): void {
  const samples = ['warm up: ls -la', 'khởi động – ấm'];
  for (const { re } of [...COMPILED_FEATURES, ...COMPILED_PATTERNS]) {
    if (re === null) continue;
    for (const s of samples) {
      re.bare.test(s);
      re.marked.test(s);
    }
  }
}
warmUp();

/** Whether a compiled source matches a message (its lower-case and folded forms). */
function matches(re: Compiled, lower: string, folded: string, marked: boolean): boolean {
  return re.bare.test(folded) && (!marked || !re.strict || re.marked.test(lower));
}

/** The part of a message the rules read: all of a short one, head and tail of a long one. */
function window(message: string): string {
  if (message.length <= RULES_HEAD_CHARS + RULES_TAIL_CHARS) return message;
  return `${message.slice(0, RULES_HEAD_CHARS)}\n${message.slice(-RULES_TAIL_CHARS)}`;
}

/** True when a message has no words to speak of: empty, punctuation, emoji. */
function hasText(message: string): boolean {
  return /[\p{L}\p{N}]/u.test(message);
}

/**
 * Messages that are chat without asking anyone: no letters at all, or one or two short words
 * ("ok", "vâng ạ", "haha") — what the rules did not recognise and is too short to classify.
 */
export function isTrivialChat(message: string): boolean {
  // Longer than 24 characters is never trivial: not split into words at all.
  if (message.length > 24) return false;
  const words = message
    .trim()
    .split(/\s+/u)
    .filter((w) => /[\p{L}\p{N}]/u.test(w));
  return words.length <= 2;
}

/** sat(s): how much a score of `s` says on its own (1.5 -> 0.63, 3 -> 0.86, 4 -> 0.93). */
function saturation(score: number): number {
  return 1 - Math.exp(-score / 1.5);
}

/**
 * Confidence from the best score and the runner-up: the best score's strength times a factor that
 * goes from 0.35 (a tie) to 1 (the runner-up scored nothing).
 */
export function confidenceOf(best: number, second: number): number {
  if (best <= 0) return 0;
  const margin = (best - Math.max(0, second)) / best;
  return Math.round(saturation(best) * (0.35 + 0.65 * margin) * 1000) / 1000;
}

function candidatesFor(hints: AttachmentHints): readonly ConcreteIntent[] {
  if (hints.audio === true && hints.image === true) return [...new Set([...AUDIO_INTENTS, ...IMAGE_INTENTS])];
  if (hints.audio === true) return AUDIO_INTENTS;
  if (hints.image === true) return IMAGE_INTENTS;
  return CONCRETE_INTENTS;
}

/** The evidence gathered for one candidate intent. */
interface Tally {
  score: number;
  readonly names: string[];
}

/** Scores every candidate intent of a message. */
export function scoreByRules(message: string, hints: AttachmentHints = {}): RuleScores {
  const candidates = candidatesFor(hints);
  const tallies = new Map<ConcreteIntent, Tally>(candidates.map((c) => [c, { score: 0, names: [] }]));
  const add = (intent: ConcreteIntent, weight: number, name: string): void => {
    const tally = tallies.get(intent);
    if (tally === undefined) return;
    tally.score += weight;
    if (weight > 0) tally.names.push(name);
  };
  if (hints.audio === true) add('transcribe', ATTACHMENT_PRIOR, 'hint.audio');
  if (hints.image === true) add('ocr', ATTACHMENT_PRIOR, 'hint.image');
  const attached = hints.audio === true || hints.image === true;
  const text = window(message);
  if (!hasText(text)) return finish(candidates, tallies, attached);

  const lower = text.toLowerCase().normalize('NFC');
  const folded = foldText(text);
  // Without diacritics the two forms are the same text and only the folded regexes run.
  const marked = lower !== folded;
  const features = new Set<Feature>();
  if (hints.audio === true) features.add('audio');
  if (hints.image === true) features.add('image');
  for (const f of COMPILED_FEATURES) {
    if (!features.has(f.feature) && matches(f.re, lower, folded, marked)) features.add(f.feature);
  }
  for (const { spec, re } of COMPILED_PATTERNS) {
    if (!tallies.has(spec.intent)) continue;
    if (spec.requires !== undefined && !spec.requires.every((f) => features.has(f))) continue;
    if (spec.unless?.some((f) => features.has(f)) === true) continue;
    if (re !== null && !matches(re, lower, folded, marked)) continue;
    add(spec.intent, spec.weight, spec.name);
  }
  return finish(candidates, tallies, false);
}

function finish(
  candidates: readonly ConcreteIntent[],
  tallies: ReadonlyMap<ConcreteIntent, Tally>,
  /** An attachment without text: its intent is certain. */
  attachmentOnly: boolean,
): RuleScores {
  const scores = candidates.map((c) => Math.max(0, tallies.get(c)?.score ?? 0));
  let best: ConcreteIntent | null = null;
  let top = 0;
  let second = 0;
  for (const [i, intent] of candidates.entries()) {
    const score = scores[i] ?? 0;
    if (score > top) {
      second = top;
      top = score;
      best = intent;
    } else if (score > second) {
      second = score;
    }
  }
  if (best === null) return { best: null, candidates, scores };
  const confidence = attachmentOnly && top > second ? 1 : confidenceOf(top, second);
  return { best: { intent: best, confidence, matched: tallies.get(best)?.names ?? [] }, candidates, scores };
}

/**
 * The rules' answer for a message: the best-scoring intent with its confidence and the names of the
 * patterns behind it, or null when nothing matched. An attachment without text decides alone (audio:
 * `transcribe`, image: `ocr`); with text, the text chooses among the attachment's intents.
 */
export function detectByRules(message: string, hints?: AttachmentHints): RuleMatch | null {
  return scoreByRules(message, hints).best;
}
