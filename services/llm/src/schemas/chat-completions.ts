import { z } from 'zod';

/**
 * `POST /v1/chat/completions`, the subset of OpenAI's API this service honours. Fields it cannot
 * honour (tools, n > 1, logprobs, images) are accepted by the schema and refused with a 400 that
 * names them, as OpenAI does for a model without the feature; unknown fields are ignored.
 */

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const otherPart = z.object({ type: z.string() }).loose();

export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(z.union([textPart, otherPart])), z.null()]).optional(),
  name: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const ResponseFormatSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string(),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

export const ChatCompletionRequestSchema = z.object({
  model: z.string().min(1).describe('`alpha-2-9b-it` (MODEL_ALIAS) or the loaded model file name'),
  messages: z.array(ChatMessageSchema).min(1),
  temperature: z.number().min(0).max(2).nullable().optional().describe('Default 1; 0 is greedy'),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  max_tokens: z
    .number()
    .int()
    .min(1)
    .nullable()
    .optional()
    .describe('Default: what the prompt leaves of the context'),
  max_completion_tokens: z.number().int().min(1).nullable().optional(),
  stop: z
    .union([z.string(), z.array(z.string()).max(4)])
    .nullable()
    .optional(),
  seed: z.number().int().nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  response_format: ResponseFormatSchema.nullable().optional(),
  frequency_penalty: z.number().min(-2).max(2).nullable().optional(),
  presence_penalty: z.number().min(-2).max(2).nullable().optional(),
  n: z.number().int().min(1).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  functions: z.array(z.unknown()).nullable().optional(),
  user: z.string().optional(),
});
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

export const UsageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  prompt_tokens_details: z
    .object({
      cached_tokens: z
        .number()
        .int()
        .describe('Prompt tokens found in the KV cache from an earlier request, not evaluated again'),
    })
    .describe('As OpenAI reports it'),
});

export const FinishReasonSchema = z.enum(['stop', 'length']);

export const ChatCompletionSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  system_fingerprint: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal('assistant'), content: z.string(), refusal: z.null() }),
      logprobs: z.null(),
      finish_reason: FinishReasonSchema,
    }),
  ),
  usage: UsageSchema,
});
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

export const ChatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  system_fingerprint: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
      logprobs: z.null(),
      finish_reason: FinishReasonSchema.nullable(),
    }),
  ),
  usage: UsageSchema.nullable().optional(),
});
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;

export const ModelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      id: z.string(),
      object: z.literal('model'),
      created: z.number().int(),
      owned_by: z.string(),
      root: z.string().describe('The GGUF file served under the alias `id`'),
      max_model_len: z.number().int(),
      name: z.string().nullable().describe('The GGUF’s own name (general.name); null until loaded'),
      license: z
        .string()
        .nullable()
        .describe(
          'The model manifest’s licence for its file, else the GGUF’s general.license; null: unknown',
        ),
    }),
  ),
});
