import { foldText } from './rules.js';

/**
 * The language a translate request asks for, when the message says it: "Dịch sang tiếng Anh: …",
 * "dich sang tieng anh", "“Đau bụng” tiếng Anh là gì?", "Translate to Vietnamese: …", "How do you
 * say … in Vietnamese?", "What's the English word for …". Pure; matched on the folded message (lower
 * case, no diacritics) like the intent rules, so the phrasings the rules take as translate are the
 * ones read here.
 *
 * A target form ("sang tiếng X", "into X", "tiếng X là gì", "X word for") wins over a looser one
 * ("bằng tiếng X", "in X", which may describe the source: "đoạn văn bằng tiếng Pháp sau sang tiếng
 * Việt"); among equals the first in the message, since the instruction comes before (or around)
 * the text to translate, which may itself name languages. Only the instruction part is read
 * (before the first ':' or line break, else the first 80 characters): "Dịch giúp tôi: The patient was
 * referred to English-speaking staff." states no target.
 */

/** Language codes by their folded Vietnamese name (after "tiếng") and English name. */
const VI_NAMES: Readonly<Record<string, string>> = {
  anh: 'en',
  viet: 'vi',
  phap: 'fr',
  trung: 'zh',
  'trung quoc': 'zh',
  hoa: 'zh',
  nhat: 'ja',
  // "Hán" (Chinese) and "Hàn" (Korean) fold alike: they are told apart before folding (see
  // `markHanHan`); a bare "han" without its diacritic is ambiguous and names no target.
  'han tu': 'zh',
  'han quoc': 'ko',
  duc: 'de',
  nga: 'ru',
  'tay ban nha': 'es',
  thai: 'th',
  lao: 'lo',
  khmer: 'km',
};
const EN_NAMES: Readonly<Record<string, string>> = {
  english: 'en',
  vietnamese: 'vi',
  french: 'fr',
  chinese: 'zh',
  mandarin: 'zh',
  japanese: 'ja',
  korean: 'ko',
  german: 'de',
  russian: 'ru',
  spanish: 'es',
  thai: 'th',
  lao: 'lo',
  khmer: 'km',
};

const alternatives = (names: Readonly<Record<string, string>>): string =>
  Object.keys(names)
    .sort((a, b) => b.length - a.length)
    .join('|');
const VI = `tieng (${alternatives(VI_NAMES)})`;
const EN = `(${alternatives(EN_NAMES)})`;

/** Patterns whose group 1 is a folded language name; `vi` says which table names it. */
interface TargetPattern {
  readonly re: RegExp;
  readonly vi: boolean;
}
// The name must end there: not "to English-speaking staff", "into Frenchman".
const pattern = (source: string, vi: boolean): TargetPattern => ({
  re: new RegExp(`\\b${source}(?![-\\w])`),
  vi,
});

const TARGET_FORMS: readonly TargetPattern[] = [
  pattern(`(?:sang|qua|ra|thanh) (?:ngon ngu )?${VI}`, true),
  pattern(`${VI} (?:la gi|noi the nao|noi sao|goi la gi|viet the nao|viet sao)`, true),
  pattern(`(?:nghia|ban dich|dich nghia) ${VI}`, true),
  pattern(`(?:to|into) ${EN}`, false),
  pattern(`${EN} (?:word|term|translation|equivalent|name) (?:for|of)`, false),
];
const LOOSE_FORMS: readonly TargetPattern[] = [pattern(`bang ${VI}`, true), pattern(`in ${EN}`, false)];

/** How much of a message without ':' or a line break is taken as its instruction. */
const INSTRUCTION_CHARS = 80;
/** The most of a message read as its instruction, and searched for ':' or a line break. */
export const MAX_INSTRUCTION_CHARS = 400;

/**
 * The instruction part of a message: before its first ':' or line break, or its first
 * `INSTRUCTION_CHARS` characters when it has neither, within its first MAX_INSTRUCTION_CHARS
 * characters (the patterns below read no more). The text to translate follows it and may name
 * languages of its own ("Dịch giúp tôi: The patient was referred to English-speaking staff."),
 * which are not the target.
 */
function instructionPart(message: string): string {
  const head = message.slice(0, MAX_INSTRUCTION_CHARS);
  const end = head.search(/[:：\r\n]/);
  return end >= 0 ? head.slice(0, end) : head.slice(0, INSTRUCTION_CHARS);
}

const NOT_LETTER_BEFORE = '(?<![\\p{L}\\p{N}_])';
const NOT_LETTER_AFTER = '(?![\\p{L}\\p{N}_])';
const HAN_ZH = new RegExp(`${NOT_LETTER_BEFORE}hán(?: tự)?${NOT_LETTER_AFTER}`, 'gu');
const HAN_KO = new RegExp(`${NOT_LETTER_BEFORE}hàn(?: quốc)?${NOT_LETTER_AFTER}`, 'gu');

/** "hán" (Chinese) and "hàn" (Korean) as names that survive folding: "hán tự", "hàn quốc". */
function markHanHan(lowerNfc: string): string {
  return lowerNfc.replace(HAN_ZH, 'hán tự').replace(HAN_KO, 'hàn quốc');
}

/** The ISO 639-1 code of the target language the message states, or null when it states none. */
export function statedTargetLanguage(message: string): string | null {
  const instruction = markHanHan(
    instructionPart(message.slice(0, MAX_INSTRUCTION_CHARS).normalize('NFC'))
      .toLowerCase()
      .replace(/\s+/g, ' '),
  );
  const folded = foldText(instruction).replace(/\s+/g, ' ');
  return firstMatch(folded, TARGET_FORMS) ?? firstMatch(folded, LOOSE_FORMS);
}

function firstMatch(text: string, patterns: readonly TargetPattern[]): string | null {
  let best: { index: number; code: string } | null = null;
  for (const { re, vi } of patterns) {
    const m = re.exec(text);
    const name = m?.[1];
    if (m === null || name === undefined) continue;
    const code = (vi ? VI_NAMES : EN_NAMES)[name];
    if (code !== undefined && (best === null || m.index < best.index)) best = { index: m.index, code };
  }
  return best?.code ?? null;
}
