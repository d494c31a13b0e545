import type { Request, Response } from 'express';
import { z } from 'zod';
import { renderErrorBody, toHttpError } from '../http/render-error.js';
import { openSse } from '../http/sse.js';
import type { Logger } from '../logger.js';
import type { Usage } from './types.js';

/**
 * OpenAI's chat-completions shapes, for the services that answer them (the agent, the task agent):
 * request fields, responses, stream chunks, the model list, and the SSE writer that streams a reply
 * as `chat.completion.chunk` events ending with `data: [DONE]` (the official SDK reads them as-is).
 */

export const OpenAiMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string(),
});

export const OpenAiUsageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

export function usageBody(u: Usage): z.infer<typeof OpenAiUsageSchema> {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

/** The request; `model` documents what the service accepts. */
export function chatCompletionRequestSchema(options: {
  readonly model: z.ZodType<string | null>;
  readonly temperature: number;
  readonly maxTokens: number;
  readonly maxTokensLimit?: number;
}) {
  const maxTokens = z
    .number()
    .int()
    .min(1)
    .max(options.maxTokensLimit ?? 32_768);
  return z.object({
    model: options.model,
    messages: z.array(OpenAiMessageSchema).min(1),
    temperature: z.number().min(0).max(2).default(options.temperature),
    top_p: z.number().gt(0).max(1).optional(),
    max_tokens: maxTokens.default(options.maxTokens),
    max_completion_tokens: maxTokens
      .optional()
      .describe("OpenAI's newer name for max_tokens; wins when both are set"),
    stream: z.boolean().default(false),
    stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(4)])
      .nullable()
      .optional(),
    seed: z.number().int().optional(),
    user: z.string().optional(),
    n: z.literal(1).optional(),
  });
}

/** `stop` as a list (OpenAI accepts a string or a list). */
export function stopList(stop: string | readonly string[] | null | undefined): string[] | undefined {
  if (stop === null || stop === undefined) return undefined;
  return typeof stop === 'string' ? [stop] : [...stop];
}

export const ChatCompletionSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      message: z.object({ role: z.literal('assistant'), content: z.string() }),
      finish_reason: z.string(),
    }),
  ),
  usage: OpenAiUsageSchema,
});

export const ChatCompletionChunkSchema = z.object({
  id: z.string(),
  object: z.literal('chat.completion.chunk'),
  created: z.number().int(),
  model: z.string(),
  choices: z.array(
    z.object({
      index: z.number().int(),
      delta: z.object({ role: z.literal('assistant').optional(), content: z.string().optional() }),
      finish_reason: z.string().nullable(),
    }),
  ),
  usage: OpenAiUsageSchema.nullable().optional(),
});

export const ModelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(
    z.object({
      id: z.string(),
      object: z.literal('model'),
      owned_by: z.literal('local'),
      created: z.number().int(),
    }),
  ),
});

export function chatCompletionBody(input: {
  id: string;
  created: number;
  model: string;
  text: string;
  finishReason: string;
  usage: Usage;
}): z.infer<typeof ChatCompletionSchema> {
  return {
    id: input.id,
    object: 'chat.completion',
    created: input.created,
    model: input.model,
    choices: [
      { index: 0, message: { role: 'assistant', content: input.text }, finish_reason: input.finishReason },
    ],
    usage: usageBody(input.usage),
  };
}

export interface ChunkStream {
  readonly id: string;
  readonly created: number;
  /** Read when each chunk is written (a router may settle on its model once the stream started). */
  readonly model: () => string;
  readonly includeUsage: boolean;
  readonly fragments: AsyncIterable<string>;
  /** Read after the last fragment. */
  readonly end: () => { finishReason: string; usage: Usage };
}

/**
 * Streams a reply as OpenAI chunks: the role, the fragments, the finish reason, the usage chunk
 * when asked, `data: [DONE]`. A client that goes away stops the iteration (which stops the
 * upstream); a failure mid-stream ends it with an error event. Resolves when the stream ended.
 */
export async function sendChunkStream(
  req: Request,
  res: Response,
  stream: ChunkStream,
  log: Logger,
  onOpen?: (open: boolean) => void,
): Promise<void> {
  const sse = openSse(req, res);
  onOpen?.(true);
  const chunk = (
    delta: Record<string, string>,
    finish: string | null,
  ): z.infer<typeof ChatCompletionChunkSchema> => ({
    id: stream.id,
    object: 'chat.completion.chunk',
    created: stream.created,
    model: stream.model(),
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...(stream.includeUsage ? { usage: null } : {}),
  });
  try {
    await sse.send(chunk({ role: 'assistant', content: '' }, null));
    for await (const fragment of stream.fragments) {
      if (sse.closed) break;
      await sse.send(chunk({ content: fragment }, null));
    }
    if (sse.closed) return;
    const end = stream.end();
    await sse.send(chunk({}, end.finishReason));
    if (stream.includeUsage) {
      await sse.send({
        id: stream.id,
        object: 'chat.completion.chunk',
        created: stream.created,
        model: stream.model(),
        choices: [],
        usage: usageBody(end.usage),
      });
    }
    sse.done();
  } catch (error) {
    log.warn({ err: error }, 'stream ended by a failure');
    sse.fail(error, renderErrorBody(toHttpError(error), req.path, 'detail'));
  } finally {
    onOpen?.(false);
  }
}
