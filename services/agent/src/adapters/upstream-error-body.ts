import { upstreamMessage } from '@clinicalsuite/kit/llm';

/**
 * Reading an OpenAI-compatible upstream's error body (its message, code, parameter) and the
 * wordings that classify a refusal (`UpstreamFailure.inputRefused`). Pure.
 */

/**
 * How OpenAI-compatible servers say a prompt does not fit: OpenAI's and this suite's LLM
 * `context_length_exceeded` ("This model's maximum context length is …"), vLLM's message, llama.cpp
 * server's `exceed_context_size_error` ("… exceeds the available context size"), TGI's 422
 * "`inputs` tokens + `max_new_tokens` must be <= …".
 */
export const CONTEXT_OVERFLOW =
  /context_length_exceeded|exceed_context_size|maximum context length|context (?:length|size|window)|prompt is too long|too many (?:input )?tokens|max_new_tokens`? must be|must have less than \d+ (?:input )?tokens|input token count\b.{0,100}\bexceeds|max_tokens`? is too large/i;

/** A parameter this upstream does not support or know: its configuration, another may take it. */
export const UNSUPPORTED =
  /unsupported|not supported|unrecognized|unknown (?:parameter|field|argument)|not permitted|extra_forbidden/i;

/** A validation error: TGI's `error_type: validation` ("Input validation error: …"), pydantic's. */
export const VALIDATION = /\bvalidation\b|validation error/i;

/** The request parameters that carry the client's values, as sent to the upstream. */
export const CLIENT_PARAMS = ['messages', 'max_tokens', 'temperature', 'top_p', 'stop', 'seed'] as const;

export interface ErrorBody {
  readonly message: string | null;
  readonly code: string | null;
  readonly param: string | null;
}

interface ErrorFields {
  readonly error?: unknown;
  readonly message?: unknown;
  readonly detail?: unknown;
  readonly code?: unknown;
  readonly type?: unknown;
  readonly error_type?: unknown;
  readonly param?: unknown;
}

/**
 * The message, code (else type) and parameter of an upstream's error body, in the shapes
 * OpenAI-compatible servers use: OpenAI's and vLLM's `{error:{message,type,code,param}}`, TGI's
 * `{error: "…", error_type}`, older vLLM's `{object:"error", message, type, code, param}`, FastAPI's
 * `{detail}` (a string, or pydantic's list of `{msg}`), `{reason}`.
 */
export function errorBody(text: string): ErrorBody {
  let b: ErrorFields;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      return { message: null, code: null, param: null };
    b = parsed;
  } catch {
    return { message: null, code: null, param: null };
  }
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const nested = typeof b.error === 'object' && b.error !== null ? (b.error as ErrorFields) : undefined;
  const details = Array.isArray(b.detail)
    ? b.detail.flatMap((d) => {
        const msg = str((d as { msg?: unknown } | null)?.msg);
        const loc = (d as { loc?: unknown } | null)?.loc;
        const at = Array.isArray(loc)
          ? loc.filter((l) => typeof l === 'string' && l !== 'body').join('.')
          : '';
        return msg === undefined ? [] : [at === '' ? msg : `${at}: ${msg}`];
      })
    : [];
  const message =
    upstreamMessage(text) ??
    str(b.error) ??
    str(b.message) ??
    (details.length > 0 ? `validation error: ${details.join('; ')}` : undefined);
  const code =
    str(nested?.code) ?? str(nested?.type) ?? str(b.code) ?? str(b.type) ?? str(b.error_type) ?? undefined;
  const param = str(nested?.param) ?? str(b.param);
  return { message: message?.slice(0, 300) ?? null, code: code?.slice(0, 100) ?? null, param: param ?? null };
}
