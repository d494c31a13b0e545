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
 * the text to translate, which may itself name languages.
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
  han: 'ko',
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
const pattern = (source: string, vi: boolean): TargetPattern => ({
  re: new RegExp(`\\b${source}\\b`),
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

/** The ISO 639-1 code of the target language the message states, or null when it states none. */
export function statedTargetLanguage(message: string): string | null {
  const folded = foldText(message).replace(/\s+/g, ' ');
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
