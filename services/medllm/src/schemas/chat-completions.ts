import {
  ChatCompletionChunkSchema as OpenAiChatCompletionChunkSchema,
  ChatCompletionSchema as OpenAiChatCompletionSchema,
  chatCompletionRequestSchema,
} from '@clinicalsuite/kit/llm';
import { z } from 'zod';

/**
 * `POST /v1/chat/completions` as the spec writes it: `model` (required, the served name),
 * `messages` (required; content a string or parts: `text` and `image_url` with a base64 data
 * URL), `temperature` 0.7 (0..2), `max_tokens` 1024 (1..4096), `top_p` 0.95, `stream` false.
 * A request that breaks the schema is a 400 (the spec's code), not the kit's 422.
 */

export const MAX_TOKENS_LIMIT = 4096;

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string() });
const ImagePartSchema = z.object({
  type: z.literal('image_url'),
  image_url: z.object({
    url: z.string().min(1).describe('data:image/png|jpeg|webp;base64,<data>'),
    detail: z.enum(['auto', 'low', 'high']).optional().describe('Accepted and ignored'),
  }),
});
export const ContentPartSchema = z.discriminatedUnion('type', [TextPartSchema, ImagePartSchema]);
export type ContentPart = z.infer<typeof ContentPartSchema>;

export const ChatMessageSchema = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([z.string(), z.array(ContentPartSchema).min(1)]),
  name: z.string().optional(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** The kit's OpenAI request with the spec's defaults, image parts in messages, and OpenAI's nulls. */
export const ChatCompletionRequestSchema = chatCompletionRequestSchema({
  model: z.string().min(1).describe('`medmodel-1.5-4b-it`'),
  temperature: 0.7,
  maxTokens: 1024,
  maxTokensLimit: MAX_TOKENS_LIMIT,
}).extend({
  messages: z.array(ChatMessageSchema).min(1),
  top_p: z.number().gt(0).max(1).default(0.95),
  seed: z.number().int().nullable().optional(),
  n: z.literal(1).nullable().optional().describe('Only 1'),
});
export type ChatCompletionRequest = z.output<typeof ChatCompletionRequestSchema>;

export const ClinicalGuardSchema = z
  .object({
    mode: z.enum(['rewrite', 'flag', 'off']),
    certainty_phrases: z.array(
      z.object({
        phrase: z.string().describe('The unhedged phrase the model wrote'),
        replacement: z.string().nullable().describe('The hedge that replaced it; null in flag mode'),
      }),
    ),
  })
  .describe('What the certainty guard found in the reply (see README)');

/** The kit's OpenAI chat completion, with what the certainty guard found. */
export const ChatCompletionSchema = OpenAiChatCompletionSchema.extend({
  clinical_guard: ClinicalGuardSchema,
});
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

export const ChatCompletionChunkSchema = OpenAiChatCompletionChunkSchema.extend({
  clinical_guard: ClinicalGuardSchema.optional().describe('On the chunk with the finish reason'),
});

export const ModelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      id: z.string(),
      object: z.literal('model'),
      created: z.number().int(),
      owned_by: z.string(),
      max_model_len: z.number().int(),
      modalities: z.array(z.string()),
    }),
  ),
});

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('medllm'),
  model: z.string(),
  backend: z.object({
    name: z.literal('llama-server'),
    state: z.enum(['waiting', 'starting', 'ready', 'restarting', 'stopped']),
    restarts: z.number().int(),
    detail: z.string().nullable(),
  }),
  context_size: z.number().int(),
  uptime_seconds: z.number().int(),
});
export type Health = z.infer<typeof HealthSchema>;
