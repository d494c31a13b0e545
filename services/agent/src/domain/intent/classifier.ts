import type { IntentSource } from '../../metrics.js';
import {
  CONCRETE_INTENTS,
  type ChatMessage,
  type ConcreteIntent,
  type Intent,
  type Language,
  type LlmCall,
  type LlmRouter,
} from '../types.js';
import { isTrivialChat, scoreByRules, type AttachmentHints, type RuleMatch } from './rules.js';

/**
 * Intent detection: `force_intent` wins; otherwise the keyword rules decide when they are sure, and
 * the LLM classifies (a JSON grammar restricted to the possible intents) when they are not. The LLM
 * is an aid, never a point of failure: a reply that does not parse, or an LLM that is down, falls
 * back to the rules' best guess or to `chat`. Only an abort of the caller's signal propagates.
 */

export interface IntentDecision {
  readonly intent: ConcreteIntent;
  readonly source: IntentSource;
  readonly confidence: number;
  readonly matched: readonly string[];
}

export interface IntentInput {
  readonly message: string;
  readonly language: Language;
  readonly force?: Intent | null | undefined;
  readonly hints?: AttachmentHints | undefined;
}

export interface IntentDetectorOptions {
  /** The LLM router; null: rules only. */
  readonly router: LlmRouter | null;
  /** AGENT_INTENT_LLM: ask the LLM when the rules are unsure. */
  readonly useLlm: boolean;
  /** Rule confidence from which the rules decide alone (default DEFAULT_INTENT_THRESHOLD). */
  readonly threshold?: number;
  /** Told why the LLM classifier failed (the request goes on with the fallback); for logs/metrics. */
  readonly onClassifierError?: (error: unknown) => void;
}

/** A rule match at or above this confidence is taken without asking the LLM. */
export const DEFAULT_INTENT_THRESHOLD = 0.5;
/** Characters of the message the LLM classifier sees. */
export const CLASSIFIER_MAX_CHARS = 2000;
/**
 * Tokens the classifier may generate. `{"intent":"face_recognize"}` is about 8 tokens for a BPE
 * vocabulary but 28 for a character-level one (the test model's); the grammar ends the reply at its
 * closing brace, so the cap only matters for a model that stalls in whitespace.
 */
export const CLASSIFIER_MAX_TOKENS = 40;
/** Confidence reported for an LLM decision: its own when it agrees with the rules' guess. */
const LLM_CONFIDENCE = 0.7;
const LLM_AGREES_CONFIDENCE = 0.9;

const DESCRIPTIONS: Readonly<Record<ConcreteIntent, string>> = {
  chat: 'greetings, small talk, thanks, general medical or health questions answered in conversation',
  transcribe: 'turn speech or an audio recording into text',
  ocr: 'read or extract the text of an image, photo or scanned document',
  search_code:
    'look up medical codes (ICD-10, ICPC-2, CPT, procedure or service codes) for a disease or procedure',
  translate: 'translate text between natural languages (Vietnamese, English...)',
  summarize: 'summarize or shorten a text',
  analyze: 'analyze symptoms, a clinical case or test results; diagnosis or differential diagnosis',
  tts: 'read text aloud, convert text to speech',
  code: 'write, explain, review or convert program code',
  debug: 'find and fix an error in code: stack traces, exceptions, failing builds',
  patient_sim: 'role-play a simulated patient for clinical training',
  face_recognize: 'recognize or identify the people or faces in a photo',
  shell: 'run a command on the server (files, disk, memory, processes)',
};

const EXAMPLES: readonly (readonly [string, ConcreteIntent])[] = [
  ['Xin chào, bệnh cúm lây qua đường nào?', 'chat'],
  ['Dịch sang tiếng Anh: bệnh nhân sốt cao', 'translate'],
  ['What is the ICD-10 code for asthma?', 'search_code'],
  ['Tôi bị đau ngực và khó thở, có thể là bệnh gì?', 'analyze'],
  ['Write a Python function that computes BMI', 'code'],
  ['TypeError: x is undefined, fix it', 'debug'],
  ['Đọc to hướng dẫn này', 'tts'],
  ['Show the disk usage of the server', 'shell'],
];

const LANGUAGE_NAMES: Readonly<Record<Language, string>> = { vi: 'Vietnamese', en: 'English' };

function systemPrompt(candidates: readonly ConcreteIntent[]): string {
  const allowed = new Set(candidates);
  const examples = EXAMPLES.filter(([, intent]) => allowed.has(intent));
  return [
    'You classify one message sent to a clinical AI assistant. Answer with JSON {"intent": "<name>"} and nothing else.',
    'Intents:',
    ...candidates.map((intent) => `- ${intent}: ${DESCRIPTIONS[intent]}`),
    ...(examples.length > 0
      ? [
          'Examples:',
          ...examples.map(([message, intent]) => `${JSON.stringify(message)} -> {"intent":"${intent}"}`),
        ]
      : []),
  ].join('\n');
}

/** The classifier's messages and schema for a message (pure; exported for tests and docs). */
export function classifierCall(
  message: string,
  language: Language,
  candidates: readonly ConcreteIntent[] = CONCRETE_INTENTS,
): LlmCall {
  const messages: ChatMessage[] = [
    { role: 'system', content: systemPrompt(candidates) },
    {
      role: 'user',
      content: `Message (${LANGUAGE_NAMES[language]}):\n${message.slice(0, CLASSIFIER_MAX_CHARS)}`,
    },
  ];
  return {
    messages,
    intent: 'chat',
    temperature: 0,
    maxTokens: CLASSIFIER_MAX_TOKENS,
    jsonSchema: {
      name: 'intent',
      schema: {
        type: 'object',
        properties: { intent: { type: 'string', enum: [...candidates] } },
        required: ['intent'],
        additionalProperties: false,
      },
    },
  };
}

/** The intent in the classifier's reply, or null when the reply is not `{"intent": <candidate>}`. */
export function parseClassifierReply(
  text: string,
  candidates: readonly ConcreteIntent[] = CONCRETE_INTENTS,
): ConcreteIntent | null {
  let value: unknown;
  try {
    value = JSON.parse(text.trim());
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || !('intent' in value)) return null;
  const { intent } = value;
  return candidates.find((c) => c === intent) ?? null;
}

const fromRules = (match: RuleMatch): IntentDecision => ({
  intent: match.intent,
  source: 'rules',
  confidence: match.confidence,
  matched: match.matched,
});

const DEFAULT_CHAT: IntentDecision = { intent: 'chat', source: 'default', confidence: 0, matched: [] };

export class IntentDetector {
  private readonly router: LlmRouter | null;
  private readonly useLlm: boolean;
  private readonly threshold: number;
  private readonly onClassifierError: ((error: unknown) => void) | undefined;

  constructor(options: IntentDetectorOptions) {
    this.router = options.router;
    this.useLlm = options.useLlm;
    this.threshold = options.threshold ?? DEFAULT_INTENT_THRESHOLD;
    this.onClassifierError = options.onClassifierError;
  }

  /**
   * The intent of a request. Rejects only when `signal` is aborted while the LLM classifies (with
   * the signal's reason).
   */
  async decide(input: IntentInput, signal: AbortSignal): Promise<IntentDecision> {
    if (input.force !== undefined && input.force !== null && input.force !== 'auto') {
      return { intent: input.force, source: 'forced', confidence: 1, matched: [] };
    }
    const { best, candidates } = scoreByRules(input.message, input.hints);
    if (best !== null && best.confidence >= this.threshold) return fromRules(best);
    const text = input.message.trim();
    // Nothing the LLM could read (an attachment alone), or a bare "ok": no need to ask.
    const askable = /[\p{L}\p{N}]/u.test(text) && !(best === null && isTrivialChat(text));
    if (!askable || !this.useLlm || this.router === null)
      return best === null ? DEFAULT_CHAT : fromRules(best);

    const call = classifierCall(text, input.language, candidates);
    let reply: string;
    try {
      reply = (await this.router.complete(call, signal)).text;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      this.onClassifierError?.(error);
      return best === null ? DEFAULT_CHAT : fromRules(best);
    }
    if (signal.aborted) throw signal.reason;
    const intent = parseClassifierReply(reply, candidates);
    if (intent === null) {
      this.onClassifierError?.(new Error('the intent classifier replied with no valid intent'));
      return best === null ? DEFAULT_CHAT : fromRules(best);
    }
    return {
      intent,
      source: 'llm',
      confidence: best?.intent === intent ? LLM_AGREES_CONFIDENCE : LLM_CONFIDENCE,
      matched: best?.intent === intent ? best.matched : [],
    };
  }
}
