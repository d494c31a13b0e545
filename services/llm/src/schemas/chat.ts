import { z } from 'zod';
import { UsageSchema } from './chat-completions.js';

/** The spec's simple `POST /chat`. Defaults are not in the spec; these are documented here. */
export const CHAT_DEFAULT_MAX_TOKENS = 512;
export const CHAT_DEFAULT_TEMPERATURE = 0.7;

export const ChatRequestSchema = z.object({
  prompt: z.string().min(1),
  max_tokens: z
    .number()
    .int()
    .min(1)
    .default(CHAT_DEFAULT_MAX_TOKENS)
    .describe(`Default ${CHAT_DEFAULT_MAX_TOKENS}`),
  temperature: z
    .number()
    .min(0)
    .max(2)
    .default(CHAT_DEFAULT_TEMPERATURE)
    .describe(`Default ${CHAT_DEFAULT_TEMPERATURE}; 0 is greedy`),
});

export const ChatResponseSchema = z.object({
  response: z.string(),
  model: z.string(),
  elapsed_time: z.string().describe('Seconds followed by "s", e.g. "1.23s"'),
  usage: UsageSchema,
});
