import {
  defineRoute,
  HttpError,
  jsonBody,
  PayloadTooLargeError,
  ServiceUnavailableError,
  ValidationError,
  type AnyRoute,
} from '@clinicalsuite/kit';
import {
  diagnosisRequestSchema,
  DiagnosisResponseSchema,
  ExtractorFailureSchema,
  type DiagnosisResponse,
} from '../api/schemas.js';
import { diagnose, ExtractorFailure } from '../pipeline/diagnose.js';
import type { ReasoningRuntime } from './runtime.js';

export const EXTRACTOR_HINT =
  "send the findings as structured input: POST the same request with `findings` (each finding's feature, present and certainty) and use_llm: false";

export function diagnosisRoute(rt: ReasoningRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/api/v1/diagnosis',
    summary: 'Ranked diagnoses with calibrated probabilities from free text and/or structured findings',
    description:
      'Four layers: 1 understanding (rule pass + LLM extractor over `text`), 2 normalisation (clinical map to ' +
      'knowledge-base features, ICD-10-CM code lookup), 3 inference (the ONNX engine, micro-batched across ' +
      'concurrent requests), 4 presentation. `timings_ms` times each layer and stage.',
    tags: ['diagnosis'],
    body: diagnosisRequestSchema({ maxFindings: rt.config.REASONING_MAX_FINDINGS }),
    bodyParser: jsonBody({ limit: rt.config.BODY_LIMIT }),
    response: DiagnosisResponseSchema,
    // The text's length is checked first: a malformed request is refused while the engine loads too.
    requiresReady: 'in-handler',
    responses: {
      400: { description: 'Body is malformed JSON' },
      415: { description: 'Body is not JSON (another Content-Type)' },
      413: {
        description: `Text longer than REASONING_MAX_TEXT_CHARS (${rt.config.REASONING_MAX_TEXT_CHARS}) or body larger than BODY_LIMIT`,
      },
      422: {
        description:
          'Invalid fields (listed), empty text without findings, unknown feature (with close matches)',
      },
      502: {
        description:
          "With use_llm: true, the LLM extractor failed: the rule pass's findings in `partial`, to send again " +
          'as structured input (without use_llm the rule pass answers alone, with a warning)',
        schema: ExtractorFailureSchema,
      },
      503: {
        description: 'Not ready: no knowledge base with a scorable condition, or the engine is not loaded',
      },
    },
    handler: async ({
      body,
      res,
      signal,
      requestId,
      requireReady,
    }): Promise<DiagnosisResponse | undefined> => {
      try {
        if (body.text !== undefined && body.text.length > rt.config.REASONING_MAX_TEXT_CHARS) {
          throw new PayloadTooLargeError(
            `text is ${body.text.length} characters, over the limit of ${rt.config.REASONING_MAX_TEXT_CHARS} (REASONING_MAX_TEXT_CHARS)`,
          );
        }
        requireReady();
        const result = await diagnose(rt.pipeline.require(), body, { signal, requestId });
        rt.metrics.diagnoses.inc({ outcome: 'ok' });
        return result;
      } catch (error) {
        if (error instanceof ExtractorFailure) {
          rt.metrics.diagnoses.inc({ outcome: 'extractor_failed' });
          res.status(502).json({
            error: { code: 'extractor_failed', message: error.message, request_id: requestId },
            partial: { findings: error.findings, unmapped: error.unmapped },
            hint: EXTRACTOR_HINT,
          });
          return undefined;
        }
        const outcome =
          error instanceof ValidationError || (error instanceof HttpError && error.status < 500)
            ? 'invalid'
            : error instanceof ServiceUnavailableError
              ? 'not_ready'
              : 'error';
        rt.metrics.diagnoses.inc({ outcome });
        throw error;
      }
    },
  });
}
