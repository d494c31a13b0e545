/**
 * The agent's vocabulary: intents, the three LLM identifiers, chat messages, and the LLM router's
 * contract that routes, pipelines, the intent classifier and the shell's translator call. Pure types
 * and constants; no I/O.
 */

/** The spec's 14 intent values; `auto` asks for detection. */
export const INTENTS = [
  'chat',
  'transcribe',
  'ocr',
  'search_code',
  'translate',
  'summarize',
  'analyze',
  'tts',
  'code',
  'debug',
  'patient_sim',
  'face_recognize',
  'shell',
  'auto',
] as const;
export type Intent = (typeof INTENTS)[number];
/** An intent that names work (everything but `auto`). */
export type ConcreteIntent = Exclude<Intent, 'auto'>;
export const CONCRETE_INTENTS = INTENTS.filter((i): i is ConcreteIntent => i !== 'auto');

/** The spec's LLM identifiers, in fallback order of the general route. */
export const UPSTREAM_IDS = ['alpha4_service', 'beta3_service', 'beta_service'] as const;
export type UpstreamId = (typeof UPSTREAM_IDS)[number];
/** `/run` accepts only these two as `force_llm`. */
export const RUN_UPSTREAM_IDS = ['alpha4_service', 'beta3_service'] as const;

export const LANGUAGES = ['vi', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];

export type Role = 'system' | 'user' | 'assistant';

export interface ChatMessage {
  readonly role: Role;
  readonly content: string;
}

export interface LlmUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
}

/** One call to "an LLM": the router picks the upstream. */
export interface LlmCall {
  readonly messages: readonly ChatMessage[];
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP?: number;
  readonly stop?: readonly string[];
  readonly seed?: number;
  /** A JSON schema the reply must follow (sent as `response_format: json_schema`). */
  readonly jsonSchema?: { readonly name: string; readonly schema: Record<string, unknown> };
  /** What the call is for: code and debug go to `beta3_service` first. */
  readonly intent: ConcreteIntent;
  /** `force_llm` / `model`: tried first; the others remain fallbacks. */
  readonly prefer?: UpstreamId | null;
}

export interface LlmResult {
  readonly text: string;
  /** The upstream that answered. */
  readonly model: UpstreamId;
  /** The model name that upstream reported. */
  readonly upstreamModel: string;
  readonly finishReason: string;
  readonly usage: LlmUsage;
  /** Upstreams that failed before this one answered, in order. */
  readonly fellBackFrom: readonly UpstreamId[];
  /** Milliseconds from the call to the last byte. */
  readonly llmMs: number;
}

/**
 * A streamed reply: resolved once an upstream sent its first fragment (failing over to the next
 * upstream before that), then iterated for text fragments. Breaking out of the loop, or aborting the
 * call's signal, stops the upstream's generation.
 */
export interface LlmStream extends AsyncIterable<string> {
  readonly model: UpstreamId;
  readonly upstreamModel: string;
  readonly fellBackFrom: readonly UpstreamId[];
  /** After the iteration ended: why generation stopped and the token counts (zeros when unknown). */
  readonly finishReason: string;
  readonly usage: LlmUsage;
}

export interface LlmRouter {
  complete(call: LlmCall, signal: AbortSignal): Promise<LlmResult>;
  stream(call: LlmCall, signal: AbortSignal): Promise<LlmStream>;
}

/** How an LLM upstream answered its health check. */
export type ProbeState = 'up' | 'not_ready' | 'down' | 'unauthorized';

/** An LLM upstream as the agent's status reports it. */
export interface UpstreamStatus {
  readonly id: UpstreamId;
  readonly url: string;
  readonly state: ProbeState | 'unknown';
  readonly latency_ms: number | null;
  readonly detail: string | null;
  /** The model name calls send (configured, or the upstream's first listed model). */
  readonly model: string | null;
  readonly cooling_down: boolean;
  /** When the cooldown ends (ISO 8601), null when not cooling down. */
  readonly cooldown_until: string | null;
  readonly checked_at: string | null;
}
