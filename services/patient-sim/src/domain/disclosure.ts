import type { CaseFile, Fact, Finding } from '../schemas/case.js';
import { matchesEn, matchesVi, prepareText, type PreparedText } from './text.js';

/**
 * The disclosure policy: which parts of a case one clinician message makes known. Pure.
 *
 * - A fact (history, symptom, medication…) is revealed when the message names one of its topics.
 *   Revealed facts accumulate in the session, and only they reach the model's prompt, so the model
 *   cannot volunteer what was not asked.
 * - A finding is released when the message asks for it: an examination or a vital sign when the
 *   message names its topic and says the clinician examines or measures; an investigation when it
 *   names its topic and orders a test or asks for a result. Findings come back as structured
 *   results; the patient never speaks them.
 */

export interface IntentWords {
  /** English, matched without regard to case. */
  readonly en: readonly string[];
  /** Vietnamese, matched as `matchesVi` does. */
  readonly vi: readonly string[];
  /** Vietnamese words whose unmarked form is another common word ("đo" / "do"): marked text only. */
  readonly viMarkedOnly?: readonly string[];
}

export const EXAM_INTENT: IntentWords = {
  en: [
    'examine',
    'exam',
    'examination',
    'check',
    'listen',
    'auscultate',
    'auscultation',
    'palpate',
    'palpation',
    'percuss',
    'inspect',
    'look at',
    'feel your',
    'press on',
    'measure',
    'take your',
    'let me see',
    'do a',
    'perform',
  ],
  vi: ['khám', 'nghe', 'kiểm tra', 'xem', 'nghiệm pháp', 'gõ', 'bắt mạch'],
  viMarkedOnly: ['đo', 'sờ', 'ấn'],
};

export const ORDER_INTENT: IntentWords = {
  en: [
    'order',
    'request',
    'send',
    'test',
    'result',
    'lab',
    'draw blood',
    'blood work',
    'bloods',
    'scan',
    'x ray',
    'xray',
    'radiograph',
    'ecg',
    'ekg',
    'ultrasound',
    'sputum',
  ],
  vi: ['xét nghiệm', 'kết quả', 'chỉ định', 'chụp', 'siêu âm', 'điện tim', 'lấy máu', 'thử máu', 'cho làm'],
};

export interface Disclosure {
  /** Facts this message reveals that the session had not revealed yet, in case order. */
  readonly newFacts: readonly Fact[];
  /** Findings this message asks for (again or for the first time), in case order. */
  readonly findings: readonly Finding[];
  /** The subset of `findings` released for the first time. */
  readonly newFindings: readonly Finding[];
}

function hasIntent(text: PreparedText, words: IntentWords): boolean {
  return (
    words.en.some((w) => matchesEn(text, w)) ||
    words.vi.some((w) => matchesVi(text, w)) ||
    (text.marked && (words.viMarkedOnly ?? []).some((w) => matchesVi(text, w)))
  );
}

function topicMatches(text: PreparedText, topics: { vi: readonly string[]; en: readonly string[] }): boolean {
  return topics.vi.some((k) => matchesVi(text, k)) || topics.en.some((k) => matchesEn(text, k));
}

export function hasExamIntent(message: string): boolean {
  return hasIntent(prepareText(message), EXAM_INTENT);
}

export function hasOrderIntent(message: string): boolean {
  return hasIntent(prepareText(message), ORDER_INTENT);
}

export function disclose(
  caseFile: Pick<CaseFile, 'facts' | 'findings'>,
  message: string,
  revealed: ReadonlySet<string>,
): Disclosure {
  const text = prepareText(message);
  const newFacts = caseFile.facts.filter((f) => !revealed.has(f.id) && topicMatches(text, f.topics));
  const examining = hasIntent(text, EXAM_INTENT);
  const ordering = hasIntent(text, ORDER_INTENT);
  const findings = caseFile.findings.filter(
    (f) => (f.kind === 'investigation' ? ordering : examining) && topicMatches(text, f.topics),
  );
  return { newFacts, findings, newFindings: findings.filter((f) => !revealed.has(f.id)) };
}
