import { BadRequestError } from '@clinicalsuite/kit';

/**
 * The context budget: the prompt and the completion share one sequence of `contextSize` tokens.
 * Without `max_tokens` the completion may use what the prompt leaves (vLLM's behaviour).
 */
export function resolveMaxTokens(
  promptTokens: number,
  requested: number | undefined,
  contextSize: number,
): number {
  const maxTokens = requested ?? contextSize - promptTokens;
  const total = promptTokens + maxTokens;
  if (maxTokens < 1 || total > contextSize) {
    const over = total - contextSize;
    const detail =
      requested === undefined
        ? `the messages alone take ${promptTokens} tokens, leaving no room for a completion`
        : `you requested ${total} tokens (${promptTokens} in the messages, ${maxTokens} in the completion)`;
    throw new BadRequestError(
      `This model's maximum context length is ${contextSize} tokens. However, ${detail}: ` +
        `${Math.max(over, 1)} token${Math.max(over, 1) === 1 ? '' : 's'} over. ` +
        'Please reduce the length of the messages or max_tokens.',
      { code: 'context_length_exceeded', param: 'messages' },
    );
  }
  return maxTokens;
}
