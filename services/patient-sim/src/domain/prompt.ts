import type { CaseFile, Fact, Finding, Language } from '../schemas/case.js';

/**
 * The prompt the language model plays the patient from. Pure.
 *
 * It is built from a `PromptView` of the case, which has no diagnosis, no findings and no facts:
 * only who the patient is, why they came and how they speak. The facts it holds are the ones the
 * session has revealed. So the model can neither name the diagnosis nor volunteer a symptom that
 * was not asked about: neither is in its input.
 */

export interface PromptView {
  readonly language: Language;
  readonly demographics: CaseFile['demographics'];
  readonly chief_complaint: string;
  readonly persona: Pick<CaseFile['persona'], 'personality' | 'speech_style'>;
}

/** The only parts of a case that may enter a prompt, copied field by field. */
export function promptView(c: CaseFile): PromptView {
  return {
    language: c.language,
    demographics: { ...c.demographics },
    chief_complaint: c.chief_complaint,
    persona: { personality: c.persona.personality, speech_style: c.persona.speech_style },
  };
}

export type ChatRole = 'system' | 'user' | 'assistant';
export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

/** One exchange already in the session: the clinician's message and the patient's reply. */
export interface Exchange {
  readonly clinician: string;
  readonly patient: string;
}

export interface PromptInput {
  readonly view: PromptView;
  /** Every fact the session has revealed, this turn's included. */
  readonly facts: readonly Fact[];
  /** What the clinician examines or orders this turn (names only: the patient knows no results). */
  readonly procedures: readonly Pick<Finding, 'kind' | 'name'>[];
  /** Earlier exchanges, oldest first. */
  readonly history: readonly Exchange[];
  readonly message: string;
  /** At most this many characters of earlier exchanges are sent (the oldest are dropped first). */
  readonly historyChars: number;
  /** A stricter reminder after a reply named a diagnosis. */
  readonly strict?: boolean;
}

interface Phrases {
  intro(v: PromptView): string;
  rules: readonly string[];
  known: string;
  complaint: string;
  noFacts: string;
  procedures(names: readonly string[], examining: boolean, ordering: boolean): string;
  strict: string;
}

const SEX: Record<Language, Record<'female' | 'male', string>> = {
  vi: { female: 'nữ', male: 'nam' },
  en: { female: 'woman', male: 'man' },
};

const PHRASES: Record<Language, Phrases> = {
  vi: {
    intro: (v) =>
      `Bạn đóng vai ${v.demographics.name}, ${SEX.vi[v.demographics.sex]}, ${v.demographics.age} tuổi, ` +
      `nghề nghiệp: ${v.demographics.occupation}. Bạn là bệnh nhân đang nói chuyện với bác sĩ. ` +
      `Tính cách: ${v.persona.personality} Cách nói: ${v.persona.speech_style}`,
    rules: [
      'Luôn giữ vai bệnh nhân; không bao giờ nói mình là AI hay mô hình ngôn ngữ.',
      'Chỉ trả lời đúng câu bác sĩ hỏi, ngắn gọn (1–3 câu), bằng tiếng Việt, như người bệnh nói.',
      'Chỉ dùng những điều bạn biết ở dưới. Điều gì không có ở dưới thì nói là không biết hoặc không để ý; không bịa thêm triệu chứng.',
      'Bạn không biết mình bị bệnh gì và không tự đoán tên bệnh.',
    ],
    known: 'Những điều bạn biết và có thể kể khi được hỏi:',
    complaint: 'Lý do đi khám',
    noFacts: '(Bác sĩ chưa hỏi thêm gì; chỉ kể lý do đi khám.)',
    procedures: (names, examining, ordering) =>
      `Lúc này bác sĩ ${examining ? 'đang khám/đo cho bạn' : ''}${examining && ordering ? ' và ' : ''}` +
      `${ordering ? 'cho làm xét nghiệm/cận lâm sàng' : ''}: ${names.join('; ')}. ` +
      'Hãy hợp tác ngắn gọn; bạn không biết kết quả.',
    strict: 'Nhắc lại: tuyệt đối không nói tên bất kỳ bệnh nào.',
  },
  en: {
    intro: (v) =>
      `You are playing ${v.demographics.name}, a ${v.demographics.age}-year-old ${SEX.en[v.demographics.sex]}, ` +
      `occupation: ${v.demographics.occupation}. You are a patient talking to a doctor. ` +
      `Personality: ${v.persona.personality} Speech: ${v.persona.speech_style}`,
    rules: [
      'Stay in character as the patient; never say you are an AI or a language model.',
      'Answer only what the doctor asks, briefly (1-3 sentences), in English, as a patient speaks.',
      'Use only what you know below. If asked about anything not listed, say you do not know or have not noticed it; never invent new symptoms.',
      'You do not know what illness you have and you never guess its name.',
    ],
    known: 'What you know and may tell when asked:',
    complaint: 'Why you came',
    noFacts: '(The doctor has not asked about anything else yet; tell only why you came.)',
    procedures: (names, examining, ordering) =>
      `Right now the doctor ${examining ? 'is examining or measuring you' : ''}${examining && ordering ? ' and ' : ''}` +
      `${ordering ? 'is ordering tests' : ''}: ${names.join('; ')}. ` +
      'Cooperate briefly; you do not know the results.',
    strict: 'Reminder: never say the name of any disease.',
  },
};

type SystemInput = Omit<PromptInput, 'history' | 'message' | 'historyChars'>;

/** What the clinician is doing right now (names only), or undefined. */
function proceduresLine(p: Phrases, input: SystemInput): string | undefined {
  if (input.procedures.length === 0) return undefined;
  const examining = input.procedures.some((f) => f.kind !== 'investigation');
  const ordering = input.procedures.some((f) => f.kind === 'investigation');
  return p.procedures(
    input.procedures.map((f) => f.name),
    examining,
    ordering,
  );
}

/**
 * One line of the system prompt, and the instruction it gives: every line but the patient's own
 * words (the chief complaint and the revealed facts, which the patient is meant to say, word for
 * word if it likes) and the blank ones.
 */
interface PromptLine {
  readonly line: string;
  readonly instruction?: string;
}

function promptLines(input: SystemInput): PromptLine[] {
  const p = PHRASES[input.view.language];
  const said = (instruction: string): PromptLine => ({ line: instruction, instruction });
  const blank: PromptLine = { line: '' };
  const lines: PromptLine[] = [
    said(p.intro(input.view)),
    blank,
    ...p.rules.map((rule) => ({ line: `- ${rule}`, instruction: rule })),
    blank,
    said(p.known),
    { line: `- ${p.complaint}: ${input.view.chief_complaint}`, instruction: `${p.complaint}:` },
    ...(input.facts.length === 0 ? [said(p.noFacts)] : input.facts.map((f) => ({ line: `- ${f.text}` }))),
  ];
  const procedures = proceduresLine(p, input);
  if (procedures !== undefined) lines.push(blank, said(procedures));
  if (input.strict === true) lines.push(blank, said(p.strict));
  return lines;
}

export function systemPrompt(input: SystemInput): string {
  return promptLines(input)
    .map((l) => l.line)
    .join('\n');
}

/**
 * The system prompt's own instructions: every part of it except the patient's words. A model that
 * echoes its prompt echoes these; `withoutEcho` removes them from a reply.
 */
export function promptInstructions(input: SystemInput): string[] {
  return promptLines(input).flatMap((l) => (l.instruction === undefined ? [] : [l.instruction]));
}

/** The most recent exchanges whose text fits in `maxChars`, oldest first. */
export function trimHistory(history: readonly Exchange[], maxChars: number): Exchange[] {
  const kept: Exchange[] = [];
  let used = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i] as Exchange;
    const size = e.clinician.length + e.patient.length;
    if (used + size > maxChars) break;
    used += size;
    kept.unshift(e);
  }
  return kept;
}

/** System prompt, the exchanges that fit, and the clinician's message. */
export function buildMessages(input: PromptInput): ChatMessage[] {
  const history = trimHistory(input.history, input.historyChars);
  return [
    { role: 'system', content: systemPrompt(input) },
    ...history.flatMap((e): ChatMessage[] => [
      { role: 'user', content: e.clinician },
      { role: 'assistant', content: e.patient },
    ]),
    { role: 'user', content: input.message },
  ];
}
