import { GpuSummarySchema } from '@clinicalsuite/kit/gpu';
import { z } from 'zod';

/**
 * The HTTP contract of the reasoning engine (POST /api/v1/diagnosis, GET /api/v1/gpu/status), as
 * zod schemas: the same declarations validate requests and document every field in OpenAPI.
 */

export const StructuredFindingSchema = z.strictObject({
  feature: z
    .string()
    .trim()
    .min(1, 'feature must not be empty')
    .max(200)
    .describe(
      'A knowledge-base feature id ("fever") or one of its labels or synonyms, English or Vietnamese',
    ),
  present: z.boolean().default(true).describe('false: the finding is absent'),
  certainty: z
    .number()
    .gt(0, 'certainty must be > 0')
    .max(1, 'certainty must be <= 1')
    .default(1)
    .describe('How firmly it is stated: 1 stated, below 1 hedged (0.75 probable, 0.5 possible)'),
});

export function diagnosisRequestSchema(limits: { maxFindings: number }) {
  return z
    .strictObject({
      text: z
        .string()
        .optional()
        .describe(
          'Free clinical text, Vietnamese or English (optional when `findings` is given). Longer than REASONING_MAX_TEXT_CHARS: 413',
        ),
      findings: z
        .array(StructuredFindingSchema)
        .max(limits.maxFindings, `at most ${limits.maxFindings} findings`)
        .optional()
        .describe(
          "Structured findings, instead of or besides the text; one for a feature overrides the text's",
        ),
      age: z
        .number()
        .min(0)
        .max(150)
        .optional()
        .describe('Age in years (used only where the base has an age feature)'),
      sex: z
        .enum(['male', 'female'])
        .optional()
        .describe('Used only where the base has a demographic feature for it'),
      top_k: z.number().int().min(1).max(50).default(10).describe('Diagnoses to return'),
      next_findings: z.number().int().min(0).max(20).default(5).describe('Suggested next findings to return'),
      use_llm: z
        .boolean()
        .optional()
        .describe(
          'Absent: the LLM reads the text too, and when it fails the rule pass alone does (a warning ' +
            'says why); true: the LLM must read it (502 with the rule findings when it fails); false: ' +
            'the rule pass only',
        ),
    })
    .superRefine((body, ctx) => {
      const hasText = body.text !== undefined && body.text.trim() !== '';
      const hasFindings = body.findings !== undefined && body.findings.length > 0;
      if (!hasText && !hasFindings) {
        ctx.addIssue({
          code: 'custom',
          path: body.text === undefined ? [] : ['text'],
          message:
            body.text === undefined
              ? 'send `text`, `findings`, or both'
              : 'text is empty (or only whitespace) and no findings were given',
        });
      }
    });
}

export type DiagnosisRequest = z.output<ReturnType<typeof diagnosisRequestSchema>>;

const SpanSchema = z
  .object({
    start: z.number().int().describe('UTF-16 offset of the first character in `text`'),
    end: z.number().int().describe('UTF-16 offset after the last character'),
    text: z.string().describe('text.slice(start, end)'),
  })
  .describe('Where in the input text the finding was read');

const LabelledLlrSchema = z.object({
  feature: z.string().describe('Knowledge-base feature id'),
  label_en: z.string(),
  label_vi: z.string().nullable(),
  llr: z
    .number()
    .describe(
      'Calibrated log-likelihood ratio (nats) this finding adds for the condition vs "none of the above"',
    ),
});

export const CodeSchema = z.object({
  code: z.string(),
  system: z.literal('ICD-10-CM'),
  title: z.string(),
  score: z.number().describe("The code search's score (BM25 or fused rank)"),
});

export const DiagnosisSchema = z.object({
  rank: z.number().int().describe('1 = most probable'),
  condition_id: z.string(),
  title_en: z.string(),
  title_vi: z.string().nullable(),
  icd10: z
    .object({
      code: z.string(),
      system: z.literal('ICD-10-CM'),
      title_en: z
        .string()
        .nullable()
        .describe("The code's title from the code search; null when it is unreachable"),
    })
    .nullable()
    .describe("The condition's ICD-10-CM code from the knowledge base; null when it has none"),
  probability: z.number().describe('Calibrated posterior probability, 0..1'),
  supporting: z.array(LabelledLlrSchema).describe('Findings for the condition (llr > 0), strongest first'),
  opposing: z.array(LabelledLlrSchema).describe('Findings against it (llr < 0), strongest first'),
  kb: z.string().describe('The knowledge base the condition comes from'),
});

export const ResponseFindingSchema = z.object({
  feature: z.string(),
  label_en: z.string(),
  label_vi: z.string().nullable(),
  present: z.boolean(),
  certainty: z.number(),
  origin: z
    .enum(['rules', 'llm', 'structured'])
    .describe("The rule pass, the LLM pass, or the request's `findings`"),
  span: SpanSchema.nullable().describe('null for structured findings'),
  value: z.number().nullable().describe('Vitals and labs: the measured value in `unit`'),
  unit: z.string().nullable(),
  codes: z.array(CodeSchema).describe('ICD-10-CM codes the code search finds for the finding (may be empty)'),
});

export const DiagnosisResponseSchema = z.object({
  request_id: z.string(),
  diagnoses: z.array(DiagnosisSchema),
  unknown_probability: z.number().describe('Probability of a condition the knowledge base does not hold'),
  next_findings: z
    .array(
      z.object({
        feature: z.string(),
        label_en: z.string(),
        label_vi: z.string().nullable(),
        kind: z.string().describe('symptom, sign, vital, lab, history or demographic'),
        information_gain_bits: z.number().describe('Expected reduction of the diagnosis entropy, bits'),
      }),
    )
    .describe('Findings not yet reported that would best discriminate'),
  findings: z.array(ResponseFindingSchema).describe('Every finding used, extracted or given'),
  unmapped: z
    .array(z.object({ text: z.string(), span: SpanSchema, reason: z.string() }))
    .describe('Extracted from the text but not a feature of the knowledge base (or not usable)'),
  model: z.object({
    engine: z.enum(['onnx', 'reference']),
    device: z.enum(['cpu', 'cuda']),
    device_reason: z.string().nullable().describe('Why the engine is not on the requested device'),
    knowledge_bases: z.array(z.object({ id: z.string(), version: z.string() })),
    calibration: z
      .object({ alpha: z.number(), source: z.string() })
      .nullable()
      .describe('The calibration exponent and its file; null: uncalibrated (α = 1)'),
    extractor: z.object({
      llm: z.string().nullable().describe('The LLM model that read the text; null when it was not asked'),
      rules: z.string().describe('The rule pass version'),
    }),
  }),
  warnings: z
    .array(z.string())
    .describe('What was skipped or degraded (code search unreachable, LLM not asked, …)'),
  timings_ms: z.object({
    understanding: z.number(),
    normalisation: z.number(),
    inference: z.number(),
    presentation: z.number(),
    total: z.number(),
    stages: z.object({
      extract_rules: z.number(),
      extract_llm: z.number(),
      code_lookup: z.number(),
      clinical_map: z.number(),
      engine: z.number(),
      result: z.number(),
    }),
  }),
});

export type DiagnosisResponse = z.infer<typeof DiagnosisResponseSchema>;

export const ExtractorFailureSchema = z.object({
  error: z.object({
    code: z.literal('extractor_failed'),
    message: z.string(),
    request_id: z.string(),
  }),
  partial: z.object({
    findings: z.array(ResponseFindingSchema).describe('What the rule pass found, mapped to features'),
    unmapped: z.array(z.object({ text: z.string(), span: SpanSchema, reason: z.string() })),
  }),
  hint: z.string(),
});

export const EngineStatusSchema = z.object({
  kind: z.enum(['onnx', 'reference']),
  device: z.enum(['cpu', 'cuda']),
  requested: z.enum(['auto', 'cpu', 'cuda']),
  fallback_reason: z.string().nullable(),
  batches: z.number().int().describe('Engine runs (one onnxruntime session.run each)'),
  requests: z.number().int().describe('Finding lists scored'),
  mean_batch_size: z.number().describe('requests / batches (0 before the first run)'),
});

export const GpuStatusResponseSchema = GpuSummarySchema.extend({
  engine: EngineStatusSchema.nullable().describe('null while the engine is not loaded (see /health)'),
  engine_reason: z.string().nullable().describe('Why the engine is not loaded'),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('reasoning'),
  version: z.string(),
  reason: z.string().optional(),
  knowledge_bases: z.array(
    z.object({
      id: z.string(),
      version: z.string(),
      conditions: z.number().int(),
      scorable: z.number().int(),
    }),
  ),
  engine: z.object({ kind: z.string(), device: z.string() }).nullable(),
  llm: z.string().nullable().describe('The extractor LLM URL; null: rule pass only'),
  code_search: z.string().nullable(),
});
