import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { NotFoundError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  ModelListSchema,
  chatCompletionBody,
  sendChunkStream,
  stopList,
} from '@clinicalsuite/kit/llm';
import type { ChatMessage, LlmCall, UpstreamId } from '../domain/types.js';
import { UPSTREAM_IDS } from '../domain/types.js';
import { ChatCompletionRequestSchema, ChatRawRequestSchema, ChatRawResponseSchema } from '../schemas/api.js';
import type { AgentRuntime } from './runtime.js';
import { usageBody } from '../use-cases/turn.js';

/**
 * The OpenAI-compatible face of the agent: `/v1/models` lists the three LLM identifiers,
 * `/v1/chat/completions` routes to the one named by `model` (null: the agent chooses) with the
 * router's fallback, in OpenAI's shapes (the official SDK works unchanged, streaming included),
 * and `/chat/raw` passes messages through with an optional system override. Stateless: no session.
 */

/** `system` replaces every system message; otherwise the messages pass as they are. */
function withSystem(messages: readonly ChatMessage[], system: string | null): ChatMessage[] {
  if (system === null) return [...messages];
  return [{ role: 'system', content: system }, ...messages.filter((m) => m.role !== 'system')];
}

function modelParam(model: string | null): UpstreamId | null {
  if (model === null || model === '' || model === 'auto') return null;
  if ((UPSTREAM_IDS as readonly string[]).includes(model)) return model as UpstreamId;
  throw new NotFoundError(
    `The model \`${model}\` does not exist. Available: ${UPSTREAM_IDS.map((m) => `\`${m}\``).join(', ')}`,
    { param: 'model' },
  );
}

export function openAiRoutes(rt: AgentRuntime): AnyRoute[] {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/models',
      summary: 'The three LLM identifiers (OpenAI list shape)',
      tags: ['openai'],
      response: ModelListSchema,
      handler: () => ({
        object: 'list' as const,
        data: rt.upstreams.ids.map((id) => ({
          id,
          object: 'model' as const,
          owned_by: 'local' as const,
          created: Math.floor(rt.startedAt / 1000),
        })),
      }),
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
        const call: LlmCall = {
          messages: withSystem(body.messages, body.system),
          maxTokens: body.max_completion_tokens ?? body.max_tokens,
          temperature: body.temperature,
          ...(body.top_p === undefined ? {} : { topP: body.top_p }),
          ...(body.stop == null ? {} : { stop: stopList(body.stop) ?? [] }),
          ...(body.seed === undefined ? {} : { seed: body.seed }),
          intent: 'chat',
          prefer,
        };
        const id = `chatcmpl-${randomUUID().replace(/-/g, '')}`;
        const created = Math.floor(rt.now() / 1000);
        rt.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
        if (!body.stream) {
          const result = await rt.router.complete(call, signal);
          rt.metrics.overhead.observe(Math.max(0, performance.now() - receivedAt - result.llmMs) / 1000);
          return chatCompletionBody({ ...result, id, created });
        }
        const stream = await rt.router.stream(call, signal);
        const open = rt.metrics.streamsOpen.labels({ transport: 'sse' });
        await sendChunkStream(
          req,
          res,
          {
            id,
            created,
            model: () => stream.model,
            includeUsage: body.stream_options?.include_usage === true,
            fragments: stream,
            end: () => ({ finishReason: stream.finishReason, usage: stream.usage }),
          },
          log,
          (opened) => (opened ? open.inc() : open.dec()),
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
      handler: async ({ body, signal, receivedAt }) => {
        rt.metrics.intents.inc({ intent: 'chat', source: 'fixed' });
        const result = await rt.router.complete(
          {
            messages: withSystem(body.messages, body.system),
            maxTokens: body.max_tokens,
            temperature: body.temperature,
            intent: 'chat',
            prefer: body.force_llm,
          },
          signal,
        );
        const total = performance.now() - receivedAt;
        rt.metrics.overhead.observe(Math.max(0, total - result.llmMs) / 1000);
        return {
          response: result.text,
          model: result.model,
          upstream_model: result.upstreamModel,
          finish_reason: result.finishReason,
          usage: usageBody(result.usage),
          fell_back_from: [...result.fellBackFrom],
          processing_time_ms: Math.round(total),
        };
      },
    }),
  ];
}
