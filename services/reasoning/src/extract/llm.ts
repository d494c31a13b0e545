/**
 * The LLM extractor: symptoms, signs and anything the rules miss, read by the suite's text LLM
 * under a JSON-schema grammar (the LLM service turns `response_format.json_schema` into a grammar,
 * so the reply always parses). The LLM is asked for each finding's span exactly as written; the code
 * then finds that span in the input (exactly, then ignoring case and diacritics) and drops every
 * finding whose span is not there: a finding is never kept without its place in the text.
 *
 * Negation and uncertainty: a finding the LLM marked (absent, or probable/possible) keeps the LLM's
 * reading; an unmarked one goes through the context pass (negation.ts). History and family scopes
 * apply to all.
 */
import type { Logger } from '@clinicalsuite/kit';
import type { ChatBackend, CompletionRequest, CompletionResult } from '@clinicalsuite/kit/llm';
import { z } from 'zod';
import { ExtractorError } from './errors.js';
import { applyContext, CERTAINTY, findCues, type Cue } from './negation.js';
import { covers, overlaps, type Span } from './terms.js';
import { foldedIndex, foldTerm, foldText, onWordBoundaries, sourceRange, type FoldedText } from './text.js';
import { EXTRACTED_KINDS, type ExtractedFinding } from './types.js';

export interface LlmExtractorOptions {
  /** The suite's LLM client (`LlmClient`) or any chat backend. */
  readonly backend: ChatBackend;
  /** The model name the LLM serves (its alias or file name). */
  readonly model: string;
  /** Most findings in one reply (the grammar's `maxItems`). Default 16. */
  readonly maxFindings?: number;
  /** Completion budget. Default 1536 tokens. */
  readonly maxTokens?: number;
  /** For the count of dropped spans (no clinical text is logged). */
  readonly logger?: Logger;
}

export const DEFAULT_MAX_FINDINGS = 16;
export const DEFAULT_LLM_MAX_TOKENS = 1536;
/** Longest span and name the grammar allows (characters). */
export const MAX_SPAN_CHARS = 80;
export const MAX_NAME_CHARS = 48;

const CERTAINTY_WORDS = ['stated', 'probable', 'possible'] as const;

/** The JSON schema of the reply (the LLM service compiles it to a grammar). */
export function findingsJsonSchema(maxFindings: number): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      findings: {
        type: 'array',
        maxItems: maxFindings,
        items: {
          type: 'object',
          properties: {
            span: { type: 'string', minLength: 1, maxLength: MAX_SPAN_CHARS },
            name: { type: 'string', minLength: 1, maxLength: MAX_NAME_CHARS },
            kind: { type: 'string', enum: [...EXTRACTED_KINDS] },
            present: { type: 'boolean' },
            certainty: { type: 'string', enum: [...CERTAINTY_WORDS] },
          },
          required: ['span', 'name', 'kind', 'present', 'certainty'],
          additionalProperties: false,
        },
      },
    },
    required: ['findings'],
    additionalProperties: false,
  };
}

const ReplySchema = z.object({
  findings: z.array(
    z.object({
      span: z.string(),
      name: z.string(),
      kind: z.enum(EXTRACTED_KINDS),
      present: z.boolean(),
      certainty: z.enum(CERTAINTY_WORDS),
    }),
  ),
});
export type LlmFinding = z.infer<typeof ReplySchema>['findings'][number];

export const SYSTEM_PROMPT = [
  'You read clinical notes written in Vietnamese or English and list the clinical findings in them as JSON.',
  'For every symptom, sign, vital sign, lab result, past medical history item, age, sex and duration in the note give:',
  '- span: the words of the note that state the finding, copied exactly as written (same language, same accents, same spelling); never translate or rephrase the span;',
  '- name: a short normalised English name in lower case ("fever", "chest pain", "cough", "shortness of breath");',
  '- kind: symptom, sign, vital, lab, history, demographic or duration;',
  '- present: false when the note says the finding is absent ("không sốt", "chưa", "denies chest pain", "no cough", "negative for"), otherwise true;',
  '- certainty: "possible" when it is hedged ("có thể", "nghi", "theo dõi", "possible", "suspected", "?"), "probable" when it is likely ("nghĩ nhiều", "probable", "likely"), otherwise "stated".',
  "List only what the note says about the patient, not a relative's illnesses. Never add a finding that is not in the note.",
].join('\n');

export function buildLlmRequest(
  text: string,
  options: Pick<LlmExtractorOptions, 'model' | 'maxFindings' | 'maxTokens'>,
): CompletionRequest {
  return {
    model: options.model,
    messages: [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: text },
    ],
    temperature: 0,
    maxTokens: options.maxTokens ?? DEFAULT_LLM_MAX_TOKENS,
    jsonSchema: {
      name: 'clinical_findings',
      schema: findingsJsonSchema(options.maxFindings ?? DEFAULT_MAX_FINDINGS),
    },
  };
}

/** The reply's findings, or an `ExtractorError` that says what was wrong with it. */
export function parseLlmReply(reply: Pick<CompletionResult, 'text' | 'finishReason'>): LlmFinding[] {
  let json: unknown;
  try {
    json = JSON.parse(reply.text);
  } catch {
    const cut =
      reply.finishReason === 'length' ? ' (cut at max tokens: lower maxFindings or raise maxTokens)' : '';
    throw new ExtractorError(`The extractor's LLM answered something other than JSON${cut}`);
  }
  const parsed = ReplySchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first === undefined ? '' : ` at ${first.path.join('.') || 'the top'}: ${first.message}`;
    throw new ExtractorError(`The extractor's LLM answered JSON that is not the findings schema${where}`);
  }
  return parsed.data.findings;
}

/** Punctuation and blanks at either end; the trailing run tried from its first character only. */
const TRIM = /^[\s.,;:!?"'()[\]{}-]+|(?<![\s.,;:!?"'()[\]{}-])[\s.,;:!?"'()[\]{}-]+$/gu;

/**
 * Where `span` is in the text: the exact characters first, then ignoring case and diacritics, on
 * word boundaries either way. Among several places, the first one not yet `taken` at or after
 * `from`, else the first one not taken. Null when it is nowhere (or everywhere taken).
 */
export function locateSpan(
  text: FoldedText,
  span: string,
  taken: readonly Span[] = [],
  from = 0,
): Span | null {
  const needle = span.replace(TRIM, '');
  if (needle === '') return null;
  const places: Span[] = [];
  for (let at = text.source.indexOf(needle); at >= 0; at = text.source.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if (onWordBoundaries(text.folded, foldedIndex(text, at), foldedIndex(text, end)))
      places.push({ start: at, end });
  }
  if (places.length === 0) {
    const foldedNeedle = foldTerm(needle);
    for (
      let at = text.folded.indexOf(foldedNeedle);
      at >= 0;
      at = text.folded.indexOf(foldedNeedle, at + 1)
    ) {
      const end = at + foldedNeedle.length;
      if (onWordBoundaries(text.folded, at, end)) places.push(sourceRange(text, at, end));
    }
  }
  const free = places.filter((p) => !taken.some((t) => t.start === p.start && t.end === p.end));
  return free.find((p) => p.start >= from) ?? free[0] ?? null;
}

export interface PlacedLlmFindings {
  readonly findings: readonly ExtractedFinding[];
  readonly family: readonly ExtractedFinding[];
  /** Findings whose span is not in the text. */
  readonly dropped: number;
}

/** The LLM's findings placed in the text, with context applied; unplaceable ones dropped. */
export function placeLlmFindings(
  source: string,
  llm: readonly LlmFinding[],
  cues: readonly Cue[] = findCues(source),
): PlacedLlmFindings {
  const text = foldText(source);
  const findings: ExtractedFinding[] = [];
  const family: ExtractedFinding[] = [];
  const taken: Span[] = [];
  let dropped = 0;
  let cursor = 0;
  for (const f of llm) {
    const at = locateSpan(text, f.span, taken, cursor);
    if (at === null) {
      dropped++;
      continue;
    }
    taken.push(at);
    cursor = at.end;
    const marked = !f.present || f.certainty !== 'stated';
    const name = f.name.toLowerCase().replace(/\s+/gu, ' ').trim();
    const raw: ExtractedFinding = {
      text: source.slice(at.start, at.end),
      start: at.start,
      end: at.end,
      kind: f.kind,
      name: name === '' ? source.slice(at.start, at.end).toLowerCase() : name,
      present: f.present,
      certainty: CERTAINTY[f.certainty],
      source: 'llm',
    };
    const placed = applyContext(source, raw, cues, { trustFinding: marked });
    (placed.family ? family : findings).push(placed.finding);
  }
  return { findings, family, dropped };
}

const MEASURED = new Set(['vital', 'lab']);

/**
 * Rule and LLM findings together. Rules win for vitals and labs (an LLM vital or lab over a rule
 * one is dropped), for age, sex and duration over the same kind, and for any finding of the same
 * name over the same text (the rule's name and context are deterministic); an LLM finding inside a
 * rule finding of the same kind is dropped too. Everything else is kept from both.
 */
export function mergeFindings(
  rules: readonly ExtractedFinding[],
  llm: readonly ExtractedFinding[],
): { findings: ExtractedFinding[]; merged: number } {
  const kept: ExtractedFinding[] = [...rules];
  let merged = 0;
  for (const f of llm) {
    const covered = rules.some(
      (r) =>
        overlaps(r, f) &&
        ((MEASURED.has(f.kind) && MEASURED.has(r.kind)) ||
          (r.kind === f.kind && (r.kind === 'demographic' || r.kind === 'duration')) ||
          r.name === f.name ||
          (r.kind === f.kind && covers(r, f))),
    );
    const duplicate = kept.some(
      (k) => k.source === 'llm' && k.start === f.start && k.end === f.end && k.name === f.name,
    );
    if (covered || duplicate) {
      merged++;
      continue;
    }
    kept.push(f);
  }
  kept.sort((a, b) => a.start - b.start || a.end - b.end || a.name.localeCompare(b.name));
  return { findings: kept, merged };
}

export interface LlmExtraction extends PlacedLlmFindings {
  readonly model: string;
  readonly returned: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly llmMs: number;
}

/**
 * Asks the LLM and places its findings. Throws `ExtractorError` (502) when the LLM fails or its
 * reply is not the findings JSON; an abort of `signal` is rethrown as it is.
 */
export async function extractWithLlm(
  source: string,
  options: LlmExtractorOptions,
  signal: AbortSignal,
  cues?: readonly Cue[],
): Promise<LlmExtraction> {
  const request = buildLlmRequest(source, options);
  let result: CompletionResult;
  try {
    result = await options.backend.complete(request, signal);
  } catch (error) {
    if (signal.aborted) throw error;
    const said = error instanceof Error ? error.message : String(error);
    throw new ExtractorError(`The extractor failed: ${said}`, { cause: error });
  }
  const llm = parseLlmReply(result);
  const placed = placeLlmFindings(source, llm, cues);
  if (placed.dropped > 0) {
    options.logger?.info(
      { returned: llm.length, dropped: placed.dropped },
      'extractor: dropped LLM findings whose span is not in the text',
    );
  }
  return {
    ...placed,
    model: result.model,
    returned: llm.length,
    promptTokens: result.usage.promptTokens,
    completionTokens: result.usage.completionTokens,
    llmMs: result.llmMs,
  };
}
