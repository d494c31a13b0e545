import { defineRoute, type AnyRoute } from '@clinicalsuite/kit';
import { formatElapsed } from '../domain/health.js';
import { ChatRequestSchema, ChatResponseSchema } from '../schemas/chat.js';
import { prepareGeneration, runGeneration } from './generation.js';
import type { LlmRuntime } from './runtime.js';

/** The spec's simple chat: one prompt as the user's message, one reply. */
export function chatRoute(rt: LlmRuntime): AnyRoute {
  return defineRoute({
    method: 'post',
    path: '/chat',
    summary: 'Prompt in, reply out',
    description: 'The prompt is sent as one user message through the model’s chat template.',
    tags: ['chat'],
    body: ChatRequestSchema,
    response: ChatResponseSchema,
    responses: { 400: { description: 'Prompt + max_tokens over the context' } },
    handler: async ({ body, signal, receivedAt, admittedAt }) => {
      const timing = { arrivedAt: receivedAt, startedAt: admittedAt };
      const engine = rt.host.require();
      const prepared = prepareGeneration(
        engine,
        [{ role: 'user', text: body.prompt }],
        body.max_tokens,
        (maxTokens) => ({
          maxTokens,
          temperature: body.temperature,
          stop: [],
          format: { type: 'text' },
        }),
      );
      const { result, usage, elapsedMs } = await runGeneration(engine, rt.metrics, prepared, timing, signal);
      return {
        response: result.text,
        model: rt.config.MODEL_ALIAS,
        elapsed_time: formatElapsed(elapsedMs),
        usage,
      };
    },
  });
}
