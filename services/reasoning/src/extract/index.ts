/**
 * The extractor: free clinical text (Vietnamese or English) in, findings out, each tied to the
 * span of the input it was read from.
 *
 * 1. The rule pass (rules.ts, pure): vitals and labs with units, age, sex, duration, and the
 *    lexicon's symptoms, signs and past conditions with negation, uncertainty, history and family
 *    context (negation.ts).
 * 2. The LLM pass (llm.ts), when an LLM is given: findings under a JSON-schema grammar, placed in
 *    the text (spans not in it are dropped), with the same context pass for what the LLM did not
 *    mark, merged with the rule findings (rules win for vitals and labs).
 *
 * A failing LLM throws `ExtractorError` carrying the rule pass's result in `partial`: the pipeline
 * answers from it, or with a 502 "extractor failed" when the request required the LLM.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from '@clinicalsuite/kit';
import { ExtractorError } from './errors.js';
import { extractWithLlm, mergeFindings, type LlmExtraction, type LlmExtractorOptions } from './llm.js';
import { findCues } from './negation.js';
import { extractRuleFindings } from './rules.js';
import type { ExtractionResult, LexiconEntry } from './types.js';

export interface ExtractOptions {
  readonly signal: AbortSignal;
  /** The LLM pass; without it only the rule pass runs (`llm: null` in the result). */
  readonly llm?: LlmExtractorOptions;
  /** Symptom, sign and history terms for the rule pass; default `BASE_LEXICON`. */
  readonly lexicon?: readonly LexiconEntry[];
  readonly logger?: Logger;
}

export async function extractFindings(text: string, options: ExtractOptions): Promise<ExtractionResult> {
  options.signal.throwIfAborted();
  const started = performance.now();
  const rules = extractRuleFindings(text, options.lexicon === undefined ? {} : { lexicon: options.lexicon });
  const rulesMs = performance.now() - started;
  if (options.llm === undefined) {
    return {
      findings: rules.findings,
      family: rules.family,
      timings: { rulesMs, llmMs: null, totalMs: performance.now() - started },
      llm: null,
    };
  }
  const llmStarted = performance.now();
  const llmOptions =
    options.logger === undefined || options.llm.logger !== undefined
      ? options.llm
      : { ...options.llm, logger: options.logger };
  let llm: LlmExtraction;
  try {
    llm = await extractWithLlm(text, llmOptions, options.signal, findCues(text));
  } catch (error) {
    if (!(error instanceof ExtractorError)) throw error;
    const llmMs = performance.now() - llmStarted;
    options.logger?.warn(
      { err: { message: error.message } },
      'extractor: the LLM pass failed; rule findings only',
    );
    throw error.withPartial({
      findings: rules.findings,
      family: rules.family,
      timings: { rulesMs, llmMs, totalMs: performance.now() - started },
      llm: null,
    });
  }
  const llmMs = performance.now() - llmStarted;
  const merged = mergeFindings(rules.findings, llm.findings);
  const family = mergeFindings(rules.family, llm.family);
  return {
    findings: merged.findings,
    family: family.findings,
    timings: { rulesMs, llmMs, totalMs: performance.now() - started },
    llm: {
      model: llm.model,
      returned: llm.returned,
      dropped: llm.dropped,
      merged: merged.merged + family.merged,
      kept: llm.findings.length + llm.family.length - merged.merged - family.merged,
      promptTokens: llm.promptTokens,
      completionTokens: llm.completionTokens,
    },
  };
}

export { ExtractorError } from './errors.js';
export {
  BASE_LEXICON,
  LEXICON_BLOCKERS,
  lexiconFromFeatures,
  matchLexicon,
  prepareLexicon,
} from './lexicon.js';
export {
  buildLlmRequest,
  DEFAULT_LLM_MAX_TOKENS,
  DEFAULT_MAX_FINDINGS,
  extractWithLlm,
  findingsJsonSchema,
  locateSpan,
  mergeFindings,
  parseLlmReply,
  placeLlmFindings,
  SYSTEM_PROMPT,
  type LlmExtraction,
  type LlmExtractorOptions,
  type LlmFinding,
  type PlacedLlmFindings,
} from './llm.js';
export {
  applyContext,
  CERTAINTY,
  contextOf,
  CUE_DEFINITIONS,
  findCues,
  type Cue,
  type CueCategory,
  type CueDirection,
  type FindingContext,
  type PlacedFinding,
} from './negation.js';
export { extractMeasurements, extractRuleFindings, type RuleOptions, type RuleResult } from './rules.js';
export { foldText, type FoldedText } from './text.js';
export {
  CREATININE_UMOL_L_PER_MG_DL,
  GLUCOSE_MG_DL_PER_MMOL_L,
  IMPOSSIBLE_OUTSIDE,
  MOLAR_MASS,
  parseNumber,
} from './units.js';
export * from './types.js';
