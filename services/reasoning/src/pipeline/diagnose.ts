/**
 * The chain, in four layers, each timed:
 *
 *   1 understanding   free text → findings: the rule pass, then the LLM extractor
 *   2 normalisation   findings → features (clinical map) and → ICD-10-CM codes (code lookup)
 *   3 inference       features → posterior, contributions, next findings (the engine, batched)
 *   4 presentation    the JSON result (labels, codes, ranks)
 *
 * Scoring is deterministic: the same findings and the same model give the same diagnoses, bit for
 * bit; nothing in it reads the clock or a random source (timings and the request id are outside).
 */
import { performance } from 'node:perf_hooks';
import { GatewayTimeoutError, type Logger } from '@clinicalsuite/kit';
import type { ChatBackend } from '@clinicalsuite/kit/llm';
import type { DiagnosisRequest, DiagnosisResponse } from '../api/schemas.js';
import type { CodeHit, CodeSearchClient } from '../clients/code-search.js';
import type { Engine, EngineInfo } from '../engine/index.js';
import { ExtractorError, extractFindings, type ExtractionResult } from '../extract/index.js';
import type { ExtractorFailureReason, ReasoningMetrics } from '../metrics.js';
import {
  engineFindings,
  mapExtracted,
  mapped,
  mapStructured,
  withImplied,
  type FeatureIndex,
  type MappedFinding,
  type Unmapped,
} from './clinical-map.js';
import type { KbFeature } from '../domain/types.js';
import { AGE_BANDS, ageBandFeature, sexEvidence } from './demographics.js';
import type { Knowledge } from './knowledge.js';

export const RULES_VERSION = 'clinicalsuite-rules/0.1.0 (vi, en)';

/** Most distinct finding queries sent to the code search per request. */
const MAX_CODE_QUERIES = 32;

export interface PipelineDeps {
  readonly knowledge: Knowledge;
  readonly engine: Engine;
  /** Why the engine is not on the requested device (the service's CPU fallback or the engine's own). */
  readonly deviceReason: string | null;
  readonly index: FeatureIndex;
  /** The LLM extractor; null when LLM_URL is unset. */
  readonly llm: {
    readonly backend: ChatBackend;
    readonly model: (signal: AbortSignal) => Promise<string>;
    readonly maxFindings: number;
    readonly maxTokens: number;
  } | null;
  readonly codeSearch: CodeSearchClient | null;
  readonly metrics?: ReasoningMetrics;
  readonly logger?: Logger;
}

export type ResponseFinding = DiagnosisResponse['findings'][number];

/** The LLM pass failed: the rule pass's findings, mapped, for the 502 body. */
export class ExtractorFailure extends Error {
  constructor(
    readonly error: ExtractorError,
    readonly reason: ExtractorFailureReason,
    readonly findings: readonly ResponseFinding[],
    readonly unmapped: readonly Unmapped[],
  ) {
    super(error.message, { cause: error });
    this.name = 'ExtractorFailure';
  }
}

export function failureReason(error: ExtractorError): ExtractorFailureReason {
  if (/other than JSON|not the findings schema/.test(error.message)) return 'invalid_reply';
  if (error.cause instanceof GatewayTimeoutError) return 'timeout';
  if (/unreachable|ECONNREFUSED|fetch failed/i.test(error.message)) return 'unreachable';
  return 'upstream_error';
}

/** The engine as the API names it: `onnx` or `reference`, on `cuda` or `cpu`. */
export function engineView(info: EngineInfo): { kind: 'onnx' | 'reference'; device: 'cuda' | 'cpu' } {
  return {
    kind: info.kind === 'onnxruntime' ? 'onnx' : 'reference',
    device: info.device.startsWith('cuda') ? 'cuda' : 'cpu',
  };
}

const round3 = (ms: number): number => Math.round(ms * 1000) / 1000;

function responseFinding(f: MappedFinding, codes: readonly CodeHit[]): ResponseFinding {
  return {
    feature: f.feature,
    label_en: f.label_en,
    label_vi: f.label_vi,
    present: f.present,
    certainty: f.certainty,
    origin: f.origin,
    span: f.span,
    value: f.value,
    unit: f.unit,
    codes: codes.map((c) => ({ code: c.code, system: c.system, title: c.title, score: c.score })),
  };
}

export async function diagnose(
  deps: PipelineDeps,
  request: DiagnosisRequest,
  context: { readonly signal: AbortSignal; readonly requestId: string },
): Promise<DiagnosisResponse> {
  const { knowledge, engine, index } = deps;
  const { signal } = context;
  const started = performance.now();
  const warnings: string[] = [];

  // Structured findings first: an unknown name is a 422 before any LLM call.
  const mapStart = performance.now();
  const structured = mapStructured(index, request.findings ?? []);
  let clinicalMapMs = performance.now() - mapStart;

  // 1 understanding
  const text = request.text ?? '';
  let extraction: ExtractionResult | null = null;
  let llmModel: string | null = null;
  const understandingStart = performance.now();
  if (text.trim() !== '') {
    const wanted = request.use_llm !== false;
    const llm = wanted ? deps.llm : null;
    if (wanted && deps.llm === null)
      warnings.push('LLM extractor not configured (LLM_URL is unset): findings from the rule pass only');
    if (!wanted) warnings.push('LLM skipped (use_llm: false): findings from the rule pass only');
    try {
      if (llm !== null) {
        const model = await llm.model(signal);
        llmModel = model;
        extraction = await extractFindings(text, {
          signal,
          lexicon: knowledge.lexicon,
          llm: {
            backend: llm.backend,
            model,
            maxFindings: llm.maxFindings,
            maxTokens: llm.maxTokens,
          },
          ...(deps.logger === undefined ? {} : { logger: deps.logger }),
        });
        llmModel = extraction.llm?.model ?? model;
      } else {
        extraction = await extractFindings(text, { signal, lexicon: knowledge.lexicon });
      }
    } catch (error) {
      if (!(error instanceof ExtractorError) || signal.aborted) throw error;
      const reason = failureReason(error);
      deps.metrics?.extractorFailures.inc({ reason });
      // Asked for explicitly (use_llm: true), the LLM's reading is required: a 502 with what the rule
      // pass found. Otherwise the engine reasons from the rule pass, and the answer says so.
      if (request.use_llm === true) {
        const partial = mapExtracted(index, error.partial?.findings ?? []);
        throw new ExtractorFailure(
          error,
          reason,
          partial.findings.map((f) => responseFinding(f, [])),
          partial.unmapped,
        );
      }
      extraction = error.partial ?? (await extractFindings(text, { signal, lexicon: knowledge.lexicon }));
      llmModel = null;
      warnings.push(
        `LLM extractor failed (${reason}: ${error.message}): findings from the rule pass only ` +
          '(use_llm: true answers 502 instead)',
      );
    }
  }
  const understandingMs = performance.now() - understandingStart;

  // 2 normalisation: clinical map, then code lookup
  const mapAgain = performance.now();
  const fromText =
    extraction === null
      ? { findings: [], unmapped: [], warnings: [] }
      : mapExtracted(index, extraction.findings);
  warnings.push(...fromText.warnings);
  const family = extraction?.family.length ?? 0;
  if (family > 0)
    warnings.push(`${family} finding(s) about relatives (family history) are not scored as the patient's`);
  const given = new Set(structured.map((f) => f.feature));
  const overridden = fromText.findings.filter((f) => given.has(f.feature));
  if (overridden.length > 0) {
    const names = [...new Set(overridden.map((f) => f.feature))].join(', ');
    warnings.push(`structured findings override what the text says about: ${names}`);
  }
  const demographics: MappedFinding[] = [];
  // The request's age and sex are the patient's: they replace what the text says of them.
  const replaced = new Set<string>();
  if (request.sex !== undefined) {
    const sex = sexEvidence(index, request.sex);
    if (sex === undefined)
      warnings.push('sex is not used: the knowledge base has no demographic feature for it');
    else if (!given.has(sex.feature.id)) {
      replaced.add(sex.feature.id);
      demographics.push(structuredDemographic(sex.feature, sex.present, null, null));
    }
  }
  if (request.age !== undefined) {
    const band = ageBandFeature(index, request.age);
    if (band === undefined) warnings.push('age is not used: the knowledge base has no age feature');
    else {
      for (const [id] of AGE_BANDS) replaced.add(id);
      if (!given.has(band.id)) demographics.push(structuredDemographic(band, true, request.age, 'year'));
    }
  }
  const used: MappedFinding[] = withImplied(index, [
    ...fromText.findings.filter((f) => !given.has(f.feature) && !replaced.has(f.feature)),
    ...structured,
    ...demographics,
  ]);
  clinicalMapMs += performance.now() - mapAgain;

  const codeStart = performance.now();
  const codes = new Map<string, CodeHit[]>();
  let codeSearchDown = false;
  if (deps.codeSearch === null) {
    if (used.some((f) => f.present)) warnings.push('code lookup skipped: CODE_SEARCH_URL is not set');
  } else if (used.some((f) => f.present)) {
    // Present findings only: a code for an absent finding would read as if the patient had it. The
    // query is the feature's English label (the concept, not the words of the text).
    const queries = [...new Set(used.filter((f) => f.present).map((f) => f.label_en))].slice(
      0,
      MAX_CODE_QUERIES,
    );
    const client = deps.codeSearch;
    const results = await Promise.allSettled(queries.map((q) => client.search(q, signal)));
    signal.throwIfAborted();
    const failures: string[] = [];
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') codes.set(queries[i] ?? '', r.value);
      else failures.push(r.reason instanceof Error ? r.reason.message : String(r.reason));
    });
    if (failures.length > 0) {
      codeSearchDown = true;
      deps.metrics?.codeLookupFailures.inc();
      warnings.push(
        `code lookup incomplete (${failures.length} of ${queries.length} failed): ${failures[0] ?? ''}`,
      );
    }
  }
  const codeLookupMs = performance.now() - codeStart;
  // The structured findings' mapping ran before layer 1; it counts here.
  const normalisationMs = clinicalMapMs + codeLookupMs;

  // 3 inference
  if (used.length === 0)
    warnings.push('no finding maps to the knowledge base: the ranking reflects the priors alone');
  const inferenceStart = performance.now();
  const result = await engine.score(engineFindings(used), {
    maxRanked: request.top_k,
    maxNextFindings: request.next_findings,
    notSuggested: index.demographics,
  });
  const inferenceMs = performance.now() - inferenceStart;

  // 4 presentation
  const presentationStart = performance.now();
  const titles = new Map<string, string | null>();
  const ranked = result.ranked;
  if (deps.codeSearch !== null && !codeSearchDown) {
    const wanted = [...new Set(ranked.flatMap((r) => knowledge.conditions.get(r.condition)?.icd10 ?? []))];
    const client = deps.codeSearch;
    const looked = await Promise.allSettled(wanted.map((c) => client.title(c, signal)));
    signal.throwIfAborted();
    looked.forEach((r, i) => {
      if (r.status === 'fulfilled') titles.set(wanted[i] ?? '', r.value);
    });
    if (looked.some((r) => r.status === 'rejected')) {
      warnings.push('ICD-10-CM titles of some diagnoses are missing: the code search did not answer');
    }
  }
  const label = (feature: string, llr: number) => {
    const f = knowledge.features.get(feature);
    return { feature, label_en: f?.label_en ?? feature, label_vi: f?.label_vi ?? null, llr };
  };
  const diagnoses = ranked.map((r, i) => {
    const c = knowledge.conditions.get(r.condition);
    const icd = c?.icd10 ?? null;
    return {
      rank: i + 1,
      condition_id: r.condition,
      title_en: c?.title_en ?? r.condition,
      title_vi: c?.title_vi ?? null,
      icd10:
        icd === null ? null : { code: icd, system: 'ICD-10-CM' as const, title_en: titles.get(icd) ?? null },
      probability: r.probability,
      supporting: r.contributions.filter((x) => x.llr > 0).map((x) => label(x.feature, x.llr)),
      opposing: r.contributions
        .filter((x) => x.llr < 0)
        .map((x) => label(x.feature, x.llr))
        .sort((a, b) => a.llr - b.llr),
      kb: knowledge.conditionBase.get(r.condition) ?? knowledge.knowledgeBase.id,
    };
  });
  const nextFindings = result.nextFindings.map((n) => {
    const f = knowledge.features.get(n.feature);
    return {
      feature: n.feature,
      label_en: f?.label_en ?? n.feature,
      label_vi: f?.label_vi ?? null,
      kind: f?.kind ?? 'symptom',
      information_gain_bits: n.gain,
    };
  });
  const view = engineView(engine.info);
  const response: Omit<DiagnosisResponse, 'timings_ms'> = {
    request_id: context.requestId,
    diagnoses,
    unknown_probability: result.unknown,
    next_findings: nextFindings,
    findings: used.map((f) => responseFinding(f, codes.get(f.label_en) ?? [])),
    unmapped: fromText.unmapped.map((u) => ({ text: u.text, span: u.span, reason: u.reason })),
    model: {
      engine: view.kind,
      device: view.device,
      device_reason: deps.deviceReason,
      knowledge_bases: knowledge.bases.map((b) => ({ id: b.id, version: b.version })),
      calibration:
        knowledge.calibrationSource === null
          ? null
          : { alpha: knowledge.model.calibration.alpha, source: knowledge.calibrationSource },
      extractor: { llm: llmModel, rules: RULES_VERSION },
    },
    warnings,
  };
  const presentationMs = performance.now() - presentationStart;
  const totalMs = performance.now() - started;
  const timings = {
    understanding: round3(understandingMs),
    normalisation: round3(normalisationMs),
    inference: round3(inferenceMs),
    presentation: round3(presentationMs),
    total: round3(totalMs),
    stages: {
      extract_rules: round3(extraction?.timings.rulesMs ?? 0),
      extract_llm: round3(extraction?.timings.llmMs ?? 0),
      code_lookup: round3(codeLookupMs),
      clinical_map: round3(clinicalMapMs),
      engine: round3(inferenceMs),
      result: round3(presentationMs),
    },
  };
  const m = deps.metrics;
  if (m !== undefined) {
    for (const [layer, ms] of Object.entries(timings)) {
      if (typeof ms === 'number') m.layerDuration.observe({ layer }, ms / 1000);
    }
    for (const [stage, ms] of Object.entries(timings.stages)) {
      if (stage === 'extract_llm' && extraction?.timings.llmMs == null) continue;
      m.stageDuration.observe({ stage }, ms / 1000);
    }
    const top = diagnoses[0];
    if (top !== undefined) m.topProbability.observe(top.probability);
  }
  return { ...response, timings_ms: timings };
}

function structuredDemographic(
  feature: KbFeature,
  present: boolean,
  value: number | null,
  unit: string | null,
): MappedFinding {
  return mapped(feature, { present, certainty: 1, origin: 'structured', span: null, value, unit });
}
