import type { ChatMessage, ConcreteIntent, Language } from './types.js';

/**
 * System prompts and user framing for the intents an LLM answers. Pure. The prompts keep the model
 * to the text it was given (no invented facts, no invented codes) and say that an analysis is not a
 * diagnosis; the language follows the request's `language` (a translation's: the target language).
 */

export type LlmIntent = 'chat' | 'analyze' | 'translate' | 'summarize' | 'code' | 'debug';
export const LLM_INTENTS: ReadonlySet<ConcreteIntent> = new Set<ConcreteIntent>([
  'chat',
  'analyze',
  'translate',
  'summarize',
  'code',
  'debug',
]);

export function isLlmIntent(intent: ConcreteIntent): intent is LlmIntent {
  return LLM_INTENTS.has(intent);
}

const REPLY_IN: Record<Language, string> = {
  vi: 'Trả lời bằng tiếng Việt.',
  en: 'Answer in English.',
};

const SYSTEM: Record<LlmIntent, Record<Language, string>> = {
  chat: {
    vi:
      'Bạn là trợ lý y khoa của một hệ thống phòng khám. Trả lời chính xác, ngắn gọn, dựa trên kiến thức y khoa ' +
      'đã được công nhận. Nếu không chắc chắn, hãy nói rõ là không chắc. Không bịa đặt thông tin về bệnh nhân.',
    en:
      'You are the medical assistant of a clinic system. Answer accurately and concisely from established medical ' +
      'knowledge. Say so when you are not sure. Never make up facts about a patient.',
  },
  analyze: {
    vi:
      'Bạn là trợ lý lâm sàng. Phân tích các triệu chứng và dữ kiện được cung cấp: tóm tắt dữ kiện, các chẩn đoán ' +
      'phân biệt có thể, dấu hiệu cảnh báo cần khám ngay, và xét nghiệm nên làm. Chỉ dựa vào dữ kiện đã cho; không ' +
      'thêm dữ kiện. Đây là gợi ý hỗ trợ, không phải chẩn đoán.',
    en:
      'You are a clinical assistant. Analyse the symptoms and facts given: summarise them, list possible ' +
      'differential diagnoses, red flags that need urgent care, and useful tests. Use only the facts given; add ' +
      'none. This is decision support, not a diagnosis.',
  },
  translate: {
    vi:
      'Bạn là biên dịch viên y khoa. Dịch chính xác, giữ nguyên thuật ngữ, số liệu, đơn vị và tên thuốc. Chỉ trả về ' +
      'bản dịch, không giải thích.',
    en:
      'You are a medical translator. Translate faithfully, keeping terms, numbers, units and drug names. Return ' +
      'only the translation, without comments.',
  },
  summarize: {
    vi: 'Tóm tắt văn bản được cung cấp một cách trung thực, ngắn gọn, giữ các dữ kiện lâm sàng quan trọng. Không thêm thông tin.',
    en: 'Summarise the text given faithfully and briefly, keeping the important clinical facts. Add nothing.',
  },
  code: {
    vi: 'Bạn là kỹ sư phần mềm. Viết mã đúng, rõ ràng, có giải thích ngắn. Đặt mã trong khối ```.',
    en: 'You are a software engineer. Write correct, clear code with a short explanation. Put code in ``` blocks.',
  },
  debug: {
    vi: 'Bạn là kỹ sư phần mềm. Tìm nguyên nhân lỗi trong mã và thông báo lỗi được cung cấp, rồi đưa ra bản sửa.',
    en: 'You are a software engineer. Find the cause of the error in the code and message given, then give a fix.',
  },
};

const LANGUAGE_NAMES: Record<string, Record<Language, string>> = {
  vi: { vi: 'tiếng Việt', en: 'Vietnamese' },
  en: { vi: 'tiếng Anh', en: 'English' },
  fr: { vi: 'tiếng Pháp', en: 'French' },
  zh: { vi: 'tiếng Trung', en: 'Chinese' },
  ja: { vi: 'tiếng Nhật', en: 'Japanese' },
  ko: { vi: 'tiếng Hàn', en: 'Korean' },
  de: { vi: 'tiếng Đức', en: 'German' },
  ru: { vi: 'tiếng Nga', en: 'Russian' },
  es: { vi: 'tiếng Tây Ban Nha', en: 'Spanish' },
  th: { vi: 'tiếng Thái', en: 'Thai' },
  lo: { vi: 'tiếng Lào', en: 'Lao' },
  km: { vi: 'tiếng Khmer', en: 'Khmer' },
};

/** A language code's name in the reply language (`vi` → "tiếng Việt"), or the code itself. */
export function languageName(code: string, replyIn: Language): string {
  return LANGUAGE_NAMES[code.toLowerCase()]?.[replyIn] ?? code;
}

/**
 * An intent's system prompt in `language`, which it also asks the reply in; for translate, which
 * answers in the target language, it names `targetLang` instead (default: `language`).
 */
export function systemPrompt(
  intent: LlmIntent,
  language: Language,
  override?: string | null,
  targetLang?: string,
): ChatMessage {
  if (override !== undefined && override !== null) return { role: 'system', content: override };
  if (intent === 'translate') {
    const target = languageName(targetLang ?? language, language);
    const into = language === 'vi' ? `Dịch sang ${target}.` : `Translate into ${target}.`;
    return { role: 'system', content: `${SYSTEM.translate[language]} ${into}` };
  }
  return { role: 'system', content: `${SYSTEM[intent][language]} ${REPLY_IN[language]}` };
}

/** The user turn for an intent: the message itself, or framed (translate, summarize). */
export function userTurn(
  intent: LlmIntent,
  text: string,
  language: Language,
  options: { sourceLang?: string; targetLang?: string } = {},
): ChatMessage {
  if (intent === 'translate') {
    const target = languageName(options.targetLang ?? language, language);
    const source =
      options.sourceLang === undefined || options.sourceLang === 'auto'
        ? ''
        : language === 'vi'
          ? ` từ ${languageName(options.sourceLang, language)}`
          : ` from ${languageName(options.sourceLang, language)}`;
    const ask =
      language === 'vi'
        ? `Dịch văn bản sau${source} sang ${target}:`
        : `Translate the following text${source} into ${target}:`;
    return { role: 'user', content: `${ask}\n\n${text}` };
  }
  if (intent === 'summarize') {
    const ask = language === 'vi' ? 'Tóm tắt văn bản sau:' : 'Summarise the following text:';
    return { role: 'user', content: `${ask}\n\n${text}` };
  }
  return { role: 'user', content: text };
}

/** /debug's user turn: the code and the error, each fenced. */
export function debugTurn(code: string, error: string, language: Language): string {
  const [c, e] = language === 'vi' ? ['Mã:', 'Lỗi:'] : ['Code:', 'Error:'];
  return `${c}\n\`\`\`\n${code}\n\`\`\`\n\n${e}\n\`\`\`\n${error}\n\`\`\``;
}

/** /debug's message: the code and the error (debugTurn), then anything else the request said. */
export function debugRequestText(code: string, error: string, message: string, language: Language): string {
  return [code.trim() !== '' || error.trim() !== '' ? debugTurn(code, error, language) : '', message.trim()]
    .filter((p) => p !== '')
    .join('\n\n');
}
