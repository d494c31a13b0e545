import { NotFoundError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  ModelListSchema,
  chatCompletionBody,
  sendChunkStream,
  stopList,
} from '@clinicalsuite/kit/llm';
import type { UpstreamId } from '../domain/types.js';
import { UPSTREAM_IDS } from '../domain/types.js';
import { ChatCompletionRequestSchema, ChatRawRequestSchema, ChatRawResponseSchema } from '../schemas/api.js';
import type { RoutesContext } from './context.js';

/**
 * The OpenAI-compatible face of the agent: `/v1/models` lists the three LLM identifiers,
 * `/v1/chat/completions` routes to the one named by `model` (null: the agent chooses) with the
 * router's fallback, in OpenAI's shapes (the official SDK works unchanged, streaming included),
 * and `/chat/raw` passes messages through with an optional system override. Stateless: no session.
 */

function modelParam(model: string | null): UpstreamId | null {
  if (model === null || model === '' || model === 'auto') return null;
  if ((UPSTREAM_IDS as readonly string[]).includes(model)) return model as UpstreamId;
  throw new NotFoundError(
    `The model \`${model}\` does not exist. Available: ${UPSTREAM_IDS.map((m) => `\`${m}\``).join(', ')}`,
    { param: 'model' },
  );
}

export function openAiRoutes({ useCases }: RoutesContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/models',
      summary: 'The three LLM identifiers (OpenAI list shape)',
      tags: ['openai'],
      response: ModelListSchema,
      handler: () => useCases.models(),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/chat/completions',
      summary: 'OpenAI-compatible chat completions across the three LLMs, streamed (SSE) or not',
      description:
        '`model` names alpha4_service, beta3_service or beta_service (tried first; the others are ' +
        'fallbacks) or is null for the agent to choose; the answering identifier comes back in `model`. ' +
        '`system` replaces the system prompt. `stream: true` sends `chat.completion.chunk` events and ' +
        '`data: [DONE]`; `stream_options.include_usage` adds a usage chunk.',
      tags: ['openai'],
      body: ChatCompletionRequestSchema,
      response: ChatCompletionSchema,
      responses: {
        200: {
          description: 'With `stream: true`: `chat.completion.chunk` events, then `data: [DONE]`',
          schema: ChatCompletionChunkSchema,
          contentType: 'text/event-stream',
        },
        404: { description: 'Unknown model' },
        502: { description: 'Every LLM upstream failed' },
      },
      requiresReady: 'in-handler',
      handler: async ({ body, signal, req, res, log, receivedAt, requireReady }) => {
        const prefer = modelParam(body.model); // an unknown model is a 404 while not ready too
        requireReady();
        const input = {
          messages: body.messages,
          system: body.system,
          maxTokens: body.max_completion_tokens ?? body.max_tokens,
          temperature: body.temperature,
          topP: body.top_p,
          stop: body.stop == null ? undefined : (stopList(body.stop) ?? []),
          seed: body.seed,
          prefer,
        };
        if (!body.stream) {
          const { id, created, result } = await useCases.chatCompletion.complete(input, {
            signal,
            since: receivedAt,
          });
          return chatCompletionBody({ ...result, id, created });
        }
        const stream = await useCases.chatCompletion.stream(input, signal);
        await sendChunkStream(
          req,
          res,
          { ...stream, includeUsage: body.stream_options?.include_usage === true },
          log,
        );
        return undefined;
      },
    }),
    defineRoute({
      method: 'post',
      path: '/chat/raw',
      summary: 'Messages straight to an LLM, with an optional system override (no session)',
      tags: ['agent'],
      body: ChatRawRequestSchema,
      response: ChatRawResponseSchema,
      handler: ({ body, signal, receivedAt }) =>
        useCases.rawChat(
          {
            messages: body.messages,
            system: body.system,
            prefer: body.force_llm,
            maxTokens: body.max_tokens,
            temperature: body.temperature,
          },
          { signal, since: receivedAt },
        ),
    }),
  ];
}
