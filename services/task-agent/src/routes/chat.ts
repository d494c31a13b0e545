import { randomUUID } from 'node:crypto';
import { NotFoundError, defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  ModelListSchema,
  chatCompletionBody,
  sendChunkStream,
  stopList,
  type Usage,
} from '@clinicalsuite/kit/llm';
import { z } from 'zod';
import { DEFAULT_SYSTEM_PROMPT, chatMessages, withDefaultSystem } from '../domain/chat.js';
import {
  AgentChatCompletionRequestSchema,
  ChatResponseSchema,
  SessionParamsSchema,
  chatRequestSchema,
} from '../schemas/api.js';
import { storable } from '../store/sql.js';
import type { TaskStore } from '../store/types.js';
import { whenReady, type TaskAgentRuntime } from './runtime.js';

/**
 * Chat with the agent: `/api/v1/chat` keeps sessions in the store (they survive restarts and are
 * shared by replicas), `/v1/chat/completions` is the OpenAI-compatible face for the official SDK
 * (stateless: the caller sends the history).
 */
export function chatRoutes(rt: TaskAgentRuntime): AnyRoute[] {
  const system = rt.config.TASK_AGENT_SYSTEM_PROMPT ?? DEFAULT_SYSTEM_PROMPT;
  const store = (): TaskStore => rt.store.require();
  return whenReady([
    defineRoute({
      method: 'post',
      path: '/api/v1/chat',
      summary: 'Send a chat message; the session (new when session_id is absent) keeps the history',
      tags: ['chat'],
      body: chatRequestSchema(rt.config.TASK_AGENT_MAX_MESSAGE_CHARS),
      response: ChatResponseSchema,
      responses: {
        400: {
          description: "The body is not valid JSON, or the conversation does not fit the LLM's context",
        },
        502: { description: 'The LLM failed' },
        503: { description: 'The LLM is not available' },
      },
      handler: async ({ body, signal }) => {
        const sessionId = body.session_id ?? rt.newSessionId();
        const history = await store().chatHistory(sessionId, rt.config.TASK_AGENT_CHAT_HISTORY);
        let result;
        try {
          result = await rt.llm.complete(
            {
              model: rt.model(),
              messages: chatMessages(system, history, body.message),
              temperature: rt.config.TASK_AGENT_TEMPERATURE,
              maxTokens: rt.config.TASK_AGENT_CHAT_MAX_TOKENS,
            },
            signal,
          );
        } catch (error) {
          rt.metrics.chatTurns.inc({ outcome: 'error' });
          throw error;
        }
        // Stored only once answered: a failed turn leaves the history as it was. The reply is the
        // text as stored (an LLM's stray NUL character removed), so the history repeats it exactly.
        const reply = storable(result.text);
        await store().appendChat(
          sessionId,
          [
            { role: 'user', content: body.message },
            { role: 'assistant', content: reply },
          ],
          new Date(rt.now()),
        );
        rt.metrics.chatTurns.inc({ outcome: 'ok' });
        // The agent answers as itself (TASK_AGENT_MODEL_NAME, the one model /v1/models lists), as an
        // OpenAI server answers with its served name: the LLM behind it is /health's llm.model.
        return { response: reply, model: rt.config.TASK_AGENT_MODEL_NAME, session_id: sessionId };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/chat/:session_id',
      summary: "Clear a chat session's history",
      tags: ['chat'],
      params: SessionParamsSchema,
      response: z.object({ cleared: z.boolean() }),
      gated: false,
      handler: async ({ params }) => ({ cleared: await store().clearChat(params.session_id) }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/models',
      summary: 'The model this agent answers as (OpenAI list shape)',
      tags: ['openai'],
      response: ModelListSchema,
      handler: () => ({
        object: 'list' as const,
        data: [
          {
            id: rt.config.TASK_AGENT_MODEL_NAME,
            object: 'model' as const,
            owned_by: 'local' as const,
            created: Math.floor(rt.startedAt / 1000),
          },
        ],
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/chat/completions',
      summary: 'OpenAI-compatible chat with the agent, streamed (SSE) or not',
      description:
        "The agent's system prompt comes first unless the messages bring their own. `model` is the agent's " +
        'name (TASK_AGENT_MODEL_NAME, as /v1/models lists it), the LLM model name, or absent; the reply ' +
        "names the agent (the LLM behind it is /health's llm.model). `stream: true` sends `chat.completion.chunk` " +
        'events and `data: [DONE]`; `stream_options.include_usage` adds a usage chunk.',
      tags: ['openai'],
      body: AgentChatCompletionRequestSchema,
      response: ChatCompletionSchema,
      responses: {
        200: {
          description: 'With `stream: true`: `chat.completion.chunk` events, then `data: [DONE]`',
          schema: ChatCompletionChunkSchema,
          contentType: 'text/event-stream',
        },
        502: { description: 'The LLM failed' },
      },
      handler: async ({ body, signal, req, res, log }) => {
        if (
          body.model !== null &&
          body.model !== rt.config.TASK_AGENT_MODEL_NAME &&
          body.model !== rt.model()
        ) {
          throw new NotFoundError(
            `The model \`${body.model}\` does not exist. Available: \`${rt.config.TASK_AGENT_MODEL_NAME}\``,
            { param: 'model' },
          );
        }
        const stop = stopList(body.stop);
        const request = {
          model: rt.model(),
          messages: withDefaultSystem(body.messages, system),
          temperature: body.temperature,
          maxTokens: body.max_completion_tokens ?? body.max_tokens,
          ...(body.top_p === undefined ? {} : { topP: body.top_p }),
          ...(stop === undefined ? {} : { stop }),
          ...(body.seed === undefined ? {} : { seed: body.seed }),
        };
        const name = rt.config.TASK_AGENT_MODEL_NAME;
        const id = `chatcmpl-${randomUUID().replace(/-/g, '')}`;
        const created = Math.floor(rt.now() / 1000);
        if (!body.stream) {
          const result = await rt.llm.complete(request, signal);
          rt.metrics.chatTurns.inc({ outcome: 'ok' });
          return chatCompletionBody({ ...result, model: name, id, created });
        }
        let end: { finishReason: string; usage: Usage } = {
          finishReason: 'unknown',
          usage: { promptTokens: 0, completionTokens: 0 },
        };
        const events = rt.llm.stream(request, signal)[Symbol.asyncIterator]();
        // The first event decides between an error status (nothing sent yet) and a stream.
        const first = await events.next();
        async function* fragments(): AsyncIterable<string> {
          try {
            for (let e = first; e.done !== true; e = await events.next()) {
              if (e.value.type === 'delta') yield e.value.text;
              else {
                end = {
                  finishReason: e.value.finishReason,
                  usage: e.value.usage ?? { promptTokens: 0, completionTokens: 0 },
                };
              }
            }
          } finally {
            await events.return?.();
          }
        }
        await sendChunkStream(
          req,
          res,
          {
            id,
            created,
            model: () => name,
            includeUsage: body.stream_options?.include_usage === true,
            fragments: fragments(),
            end: () => end,
          },
          log,
        );
        rt.metrics.chatTurns.inc({ outcome: 'ok' });
        return undefined;
      },
    }),
  ]);
}
