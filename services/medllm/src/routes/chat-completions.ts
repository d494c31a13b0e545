import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  BadGatewayError,
  BadRequestError,
  ClientClosedRequestError,
  GatewayTimeoutError,
  HttpError,
  defineRoute,
  openSse,
  renderErrorBody,
  toHttpError,
  type AnyRoute,
} from '@clinicalsuite/kit';
import express from 'express';
import type { BackendMessage, BackendPart, BackendStreamEvent } from '../adapters/backend-client.js';
import { checkImage, type CheckedImage } from '../adapters/image-check.js';
import { CertaintyGuard, type CertaintyFinding } from '../domain/certainty.js';
import { checkImageCount, decodeDataUrl, type ImageLimits } from '../domain/images.js';
import { checkContext, planConversation, type PlannedMessage } from '../domain/prompt.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
  type ChatCompletion,
} from '../schemas/chat-completions.js';
import type { MedllmRuntime } from './runtime.js';

/**
 * `POST /v1/chat/completions`: validate (400), decode and check every image (400), check the
 * backend is up (502), count the prompt against the context (400 saying by how much), then stream
 * from llama-server (whole replies are gathered from the stream, so every request is timed alike)
 * through the certainty guard, as one `chat.completion` or as `chat.completion.chunk` events
 * ending with `data: [DONE]`. A client that goes away aborts the backend request.
 */

export function chatCompletionsRoute(rt: MedllmRuntime): AnyRoute {
  const limits: ImageLimits = {
    maxImages: rt.config.MAX_IMAGES,
    maxBytes: rt.config.MAX_IMAGE_BYTES,
    maxPixels: rt.config.MAX_IMAGE_PIXELS,
  };
  return defineRoute({
    method: 'post',
    path: '/v1/chat/completions',
    summary: 'OpenAI-compatible chat completions over text and images, streamed (SSE) or not',
    description:
      'Images are `image_url` parts with base64 data URLs (`data:image/png|jpeg|webp;base64,...`), ' +
      `at most ${rt.config.MAX_IMAGES} per request, ${Math.round(rt.config.MAX_IMAGE_BYTES / 1048576)} MB ` +
      `and ${rt.config.MAX_IMAGE_PIXELS} pixels each; each costs ${rt.config.IMAGE_TOKENS} tokens of the ` +
      `${rt.config.CONTEXT_SIZE}-token context. \`stream: true\` answers \`chat.completion.chunk\` events ` +
      'ending with `data: [DONE]`. The deployment’s system prompt comes first; the certainty guard ' +
      'reports (and by default hedges) unhedged certainty in `clinical_guard`.',
    tags: ['chat'],
    body: ChatCompletionRequestSchema,
    bodyParser: [express.json({ limit: rt.config.BODY_LIMIT })],
    response: ChatCompletionSchema,
    requiresReady: false,
    gated: true,
    validationStatus: 400,
    responses: {
      400: {
        description:
          'Schema wrong (model or messages missing), unknown model, bad image (type, base64, size, count, pixels), or over the context',
      },
      500: { description: 'Engine error (vision component, out of memory)' },
      502: { description: 'Backend not ready or stopped' },
      200: {
        description: 'With `stream: true`: server-sent `chat.completion.chunk` events, then `data: [DONE]`',
        schema: ChatCompletionChunkSchema,
        contentType: 'text/event-stream',
      },
    },
    handler: async ({ body, req, res, signal, log, receivedAt, admittedAt }) => {
      if (body.model !== rt.config.SERVED_MODEL_NAME) {
        throw new BadRequestError(
          `model: unknown model "${body.model}"; this service serves "${rt.config.SERVED_MODEL_NAME}"`,
          {
            param: 'model',
            code: 'model_not_found',
          },
        );
      }
      const plan = planConversation(body.messages, rt.config.systemPrompt);
      // The request is checked whole before the backend is asked for: a broken image is a 400
      // whether or not llama-server runs.
      const images = await checkImages(rt, plan.images, limits);
      const client = rt.backend.ready;
      if (client === undefined) {
        throw new BadGatewayError(
          `Backend not ready or stopped: ${rt.readiness.reason ?? 'llama-server is not running'}`,
        );
      }
      const maxTokens = body.max_completion_tokens ?? body.max_tokens;
      const textTokens = await client.countPromptTokens(backendMessages(plan.messages, null), signal);
      const estimate = checkContext({
        textTokens,
        images: images.size,
        imageTokens: rt.config.IMAGE_TOKENS,
        maxTokens,
        contextSize: rt.config.CONTEXT_SIZE,
      });
      rt.metrics.imagesPerRequest.observe(images.size);
      rt.metrics.queueTime.observe((admittedAt - receivedAt) / 1000);

      const request = {
        model: rt.config.SERVED_MODEL_NAME,
        messages: backendMessages(plan.messages, images),
        temperature: body.temperature,
        top_p: body.top_p,
        max_tokens: maxTokens,
        ...(body.stop === undefined || body.stop === null
          ? {}
          : { stop: typeof body.stop === 'string' ? [body.stop] : body.stop }),
        ...(body.seed === undefined || body.seed === null ? {} : { seed: body.seed }),
      };
      const guard = new CertaintyGuard(rt.config.CERTAINTY_GUARD, plan.promptText);
      const meta = {
        id: `chatcmpl-${randomUUID().replace(/-/g, '')}`,
        created: Math.floor(rt.now().getTime() / 1000),
        model: rt.config.SERVED_MODEL_NAME,
      };
      // The first event is awaited before anything is sent, so a backend that refuses or fails at
      // once (400, 500, 502) answers with that status, streamed or not.
      const run = await started(measured(rt, client.stream(request, signal), receivedAt, signal));

      if (!body.stream) {
        let text = '';
        let end: Extract<BackendStreamEvent, { type: 'end' }> | undefined;
        for await (const event of run) {
          if (event.type === 'delta') text += guard.push(event.text);
          else end = event;
        }
        text += guard.flush();
        const usage = end?.usage ?? { promptTokens: estimate, completionTokens: 0 };
        countFindings(rt, guard.findings, guard.mode);
        const reply: ChatCompletion = {
          ...meta,
          object: 'chat.completion',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text },
              finish_reason: end?.finishReason ?? 'stop',
            },
          ],
          usage: usageBody(usage),
          clinical_guard: guardBody(guard.mode, guard.findings),
        };
        return reply;
      }

      const includeUsage = body.stream_options?.include_usage === true;
      const sse = openSse(req, res);
      const chunk = (
        delta: Record<string, string>,
        finish: string | null,
        extra: Record<string, unknown> = {},
      ) => ({
        ...meta,
        object: 'chat.completion.chunk' as const,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...(includeUsage ? { usage: null } : {}),
        ...extra,
      });
      try {
        await sse.send(chunk({ role: 'assistant', content: '' }, null));
        for await (const event of run) {
          if (sse.closed) break;
          if (event.type === 'delta') {
            const text = guard.push(event.text);
            if (text !== '') await sse.send(chunk({ content: text }, null));
            continue;
          }
          const rest = guard.flush();
          if (rest !== '') await sse.send(chunk({ content: rest }, null));
          countFindings(rt, guard.findings, guard.mode);
          await sse.send(
            chunk({}, event.finishReason, { clinical_guard: guardBody(guard.mode, guard.findings) }),
          );
          if (includeUsage) {
            await sse.send({
              ...meta,
              object: 'chat.completion.chunk',
              choices: [],
              usage: usageBody(event.usage ?? { promptTokens: estimate, completionTokens: 0 }),
            });
          }
        }
        sse.done();
      } catch (error) {
        if (sse.closed || signal.aborted) return undefined;
        log.warn({ code: toHttpError(error).code }, 'stream ended by a failure');
        sse.fail(error, renderErrorBody(toHttpError(error), req.path, 'detail'));
      }
      return undefined;
    },
  });
}

async function checkImages(
  rt: MedllmRuntime,
  refs: readonly { param: string; url: string }[],
  limits: ImageLimits,
): Promise<Map<string, CheckedImage>> {
  const checked = new Map<string, CheckedImage>();
  try {
    checkImageCount(refs.length, limits);
    // One at a time: at most one decoded image in memory besides the request's own bytes.
    for (const ref of refs)
      checked.set(ref.param, await checkImage(decodeDataUrl(ref.url, ref.param, limits), limits));
  } catch (error) {
    if (error instanceof HttpError) rt.metrics.imagesRejected.inc({ reason: error.code });
    throw error;
  }
  return checked;
}

/** The conversation in OpenAI's shape; `images` null leaves images out (for counting text tokens). */
function backendMessages(
  messages: readonly PlannedMessage[],
  images: Map<string, CheckedImage> | null,
): BackendMessage[] {
  return messages.map((m) => {
    const hasImage = m.parts.some((p) => p.type === 'image');
    if (!hasImage || images === null) {
      return { role: m.role, content: m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') };
    }
    const parts: BackendPart[] = m.parts.map((p) => {
      if (p.type === 'text') return { type: 'text', text: p.text };
      const image = images.get(p.ref.param);
      if (image === undefined) throw new Error(`image ${p.ref.param} was not checked`);
      return {
        type: 'image_url',
        image_url: { url: `data:${image.mediaType};base64,${image.bytes.toString('base64')}` },
      };
    });
    return { role: m.role, content: parts };
  });
}

/** Waits for the first event; the returned iterable yields it, then the rest. */
async function started<T>(events: AsyncIterable<T>): Promise<AsyncIterable<T>> {
  const iterator = events[Symbol.asyncIterator]();
  const first = await iterator.next();
  return {
    async *[Symbol.asyncIterator]() {
      if (first.done === true) return;
      yield first.value;
      for (;;) {
        const next = await iterator.next();
        if (next.done === true) return;
        yield next.value;
      }
    },
  };
}

/** The backend's events, with vLLM's timings and counters recorded as they pass. */
async function* measured(
  rt: MedllmRuntime,
  events: AsyncIterable<BackendStreamEvent>,
  receivedAt: number,
  signal: AbortSignal,
): AsyncIterable<BackendStreamEvent> {
  const m = rt.metrics;
  let last: number | undefined;
  let pieces = 0;
  try {
    for await (const event of events) {
      const now = performance.now();
      if (event.type === 'delta') {
        pieces += 1;
        if (last === undefined) m.timeToFirstToken.observe((now - receivedAt) / 1000);
        else m.interTokenLatency.observe((now - last) / 1000);
        last = now;
      } else {
        m.e2eLatency.observe((now - receivedAt) / 1000);
        if (event.usage !== null) {
          m.promptTokens.inc(event.usage.promptTokens);
          m.generationTokens.inc(event.usage.completionTokens);
        } else m.generationTokens.inc(pieces);
        m.requestSuccess.inc({ finished_reason: event.finishReason });
      }
      yield event;
    }
  } catch (error) {
    const reason = signal.aborted
      ? signal.reason instanceof GatewayTimeoutError
        ? 'timeout'
        : 'client_closed'
      : error instanceof ClientClosedRequestError
        ? 'client_closed'
        : 'error';
    m.requestsAborted.inc({ reason });
    m.generationTokens.inc(pieces);
    throw error;
  }
}

function usageBody(u: { promptTokens: number; completionTokens: number }) {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
  };
}

function guardBody(
  mode: ChatCompletion['clinical_guard']['mode'],
  findings: readonly CertaintyFinding[],
): ChatCompletion['clinical_guard'] {
  return { mode, certainty_phrases: findings.map((f) => ({ phrase: f.phrase, replacement: f.replacement })) };
}

function countFindings(rt: MedllmRuntime, findings: readonly CertaintyFinding[], mode: string): void {
  if (findings.length > 0)
    rt.metrics.certaintyPhrases.inc(
      { action: mode === 'rewrite' ? 'rewritten' : 'flagged' },
      findings.length,
    );
}
