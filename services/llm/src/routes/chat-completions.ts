import { randomUUID } from 'node:crypto';
import { defineRoute, openSse, renderErrorBody, toHttpError, type AnyRoute } from '@clinicalsuite/kit';
import {
  chatCompletion,
  chunk,
  completionId,
  usageChunk,
  type CompletionMeta,
} from '../domain/completions.js';
import {
  checkModelName,
  checkSupported,
  generationParams,
  outputFormat,
  requestedMaxTokens,
  toTurns,
} from '../domain/requests.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
} from '../schemas/chat-completions.js';
import { prepareGeneration, runGeneration } from './generation.js';
import type { LlmRuntime } from './runtime.js';
import { StreamPacer } from './stream-pacer.js';

export function chatCompletionsRoute(rt: LlmRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'OpenAI-compatible chat completions, streamed (SSE) or not',
    description:
      'Works with the official OpenAI SDKs. `stream: true` answers `chat.completion.chunk` events ending ' +
      'with `data: [DONE]`; `stream_options.include_usage` adds a last chunk with the usage. ' +
      '`response_format` with a JSON schema constrains the output with a grammar. Prompt plus ' +
      '`max_tokens` must fit the context (400 otherwise).',
    tags: ['chat'],
    body: ChatCompletionRequestSchema,
    response: ChatCompletionSchema,
    responses: {
      400: {
        description: 'Invalid parameters, unsupported feature, or prompt + max_tokens over the context',
      },
      404: { description: 'Unknown model name' },
      200: {
        description: 'With `stream: true`: server-sent `chat.completion.chunk` events, then `data: [DONE]`',
        schema: ChatCompletionChunkSchema,
        contentType: 'text/event-stream',
      },
    },
    // What needs no model is checked first: a malformed request is a 400 while the model loads too.
    requiresReady: 'in-handler',
    handler: async ({ body, req, res, signal, receivedAt, admittedAt, requireReady }) => {
      const timing = { arrivedAt: receivedAt, startedAt: admittedAt };
      checkSupported(body);
      checkModelName(body.model, rt.modelNames());
      const turns = toTurns(body.messages); // what a text model cannot take: 400
      outputFormat(body); // a JSON schema the grammar cannot express: 400
      requireReady();
      const engine = rt.host.require();
      const prepared = prepareGeneration(engine, turns, requestedMaxTokens(body), (maxTokens) =>
        generationParams(body, maxTokens),
      );
      const meta: CompletionMeta = {
        id: completionId(randomUUID()),
        created: Math.floor(rt.now().getTime() / 1000),
        model: body.model,
      };
      if (body.stream !== true) {
        const { result, usage } = await runGeneration(engine, rt.metrics, prepared, timing, signal);
        return chatCompletion(meta, result.text, result.finishReason, usage);
      }

      const includeUsage = body.stream_options?.include_usage === true;
      const sse = openSse(req, res);
      void sse.send(chunk(meta, { role: 'assistant', content: '' }, null, includeUsage));
      const pacer = new StreamPacer(rt.config.STREAM_INTERVAL_MS, (text) => {
        void sse.send(chunk(meta, { content: text }, null, includeUsage));
      });
      try {
        const { result, usage } = await runGeneration(
          engine,
          rt.metrics,
          prepared,
          timing,
          signal,
          (text) => {
            pacer.push(text);
          },
        );
        pacer.flush();
        await sse.send(chunk(meta, {}, result.finishReason, includeUsage));
        if (includeUsage) await sse.send(usageChunk(meta, usage));
        sse.done();
      } catch (error) {
        if (sse.closed || signal.aborted) {
          pacer.cancel();
          return undefined; // client gone, or the deadline ended it
        }
        pacer.flush(); // what was generated before the failure still reaches the client
        sse.fail(error, renderErrorBody(toHttpError(error), req.path, 'detail'));
      }
      return undefined;
    },
  });
}
