import { BadRequestError, NotFoundError } from '@clinicalsuite/kit';
import type { ChatCompletionRequest, ChatMessage } from '../schemas/chat-completions.js';
import { grammarSchema, UnsupportedSchemaError } from './json-schema.js';
import type { ChatTurn, GenerationParams, OutputFormat } from './types.js';

/** OpenAI's default temperature. */
export const DEFAULT_TEMPERATURE = 1;

/** Names a request's `model` may take: the alias, and the loaded file's name. */
export function checkModelName(requested: string, accepted: readonly string[]): void {
  if (!accepted.includes(requested)) {
    throw new NotFoundError(
      `The model \`${requested}\` does not exist. Available: ${accepted.map((m) => `\`${m}\``).join(', ')}`,
      { param: 'model' },
    );
  }
}

/** OpenAI messages to chat turns; what a text model cannot take is refused with 400. */
export function toTurns(messages: readonly ChatMessage[]): ChatTurn[] {
  return messages.map((message, i) => {
    const param = `messages[${i}]`;
    if (message.role === 'tool' || message.role === 'function') {
      throw new BadRequestError(
        `${param}: role "${message.role}" is not supported: this service has no tools`,
        {
          param: `${param}.role`,
          code: 'unsupported_role',
        },
      );
    }
    const role = message.role === 'developer' ? 'system' : message.role;
    return { role, text: contentText(message.content, `${param}.content`) };
  });
}

function contentText(content: ChatMessage['content'], param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return content
    .map((part, j) => {
      if (part.type === 'text' && 'text' in part && typeof part.text === 'string') return part.text;
      throw new BadRequestError(
        `${param}[${j}]: content parts of type "${part.type}" are not supported: this model takes text only`,
        { param: `${param}[${j}].type`, code: 'unsupported_content' },
      );
    })
    .join('\n');
}

/** Refuses what the service cannot honour, naming the field. */
export function checkSupported(request: ChatCompletionRequest): void {
  const refuse = (param: string, why: string): never => {
    throw new BadRequestError(`${param}: ${why}`, { param, code: 'unsupported_parameter' });
  };
  if (request.n !== undefined && request.n !== null && request.n !== 1) refuse('n', 'only n=1 is supported');
  if (request.logprobs === true) refuse('logprobs', 'log probabilities are not supported');
  if ((request.tools?.length ?? 0) > 0) refuse('tools', 'tool calling is not supported by this service');
  if ((request.functions?.length ?? 0) > 0)
    refuse('functions', 'function calling is not supported by this service');
  if (request.stream !== true && request.stream_options != null) {
    refuse('stream_options', 'only allowed when stream is true');
  }
}

export function outputFormat(request: ChatCompletionRequest): OutputFormat {
  const format = request.response_format;
  if (format === undefined || format === null || format.type === 'text') return { type: 'text' };
  if (format.type === 'json_object') return { type: 'json', schema: 'any' };
  try {
    return { type: 'json', schema: grammarSchema(format.json_schema.schema ?? {}) };
  } catch (error) {
    if (!(error instanceof UnsupportedSchemaError)) throw error;
    throw new BadRequestError(`response_format.json_schema.schema is not supported: ${error.message}`, {
      param: 'response_format',
      code: 'invalid_json_schema',
    });
  }
}

export function stopList(stop: ChatCompletionRequest['stop']): string[] {
  if (stop === undefined || stop === null) return [];
  return (typeof stop === 'string' ? [stop] : stop).filter((s) => s !== '');
}

/** The generation parameters of a chat-completions request, `maxTokens` resolved by the caller. */
export function generationParams(request: ChatCompletionRequest, maxTokens: number): GenerationParams {
  return {
    maxTokens,
    temperature: request.temperature ?? DEFAULT_TEMPERATURE,
    stop: stopList(request.stop),
    format: outputFormat(request),
    ...(request.top_p == null ? {} : { topP: request.top_p }),
    ...(request.seed == null ? {} : { seed: request.seed }),
    ...(request.frequency_penalty == null ? {} : { frequencyPenalty: request.frequency_penalty }),
    ...(request.presence_penalty == null ? {} : { presencePenalty: request.presence_penalty }),
  };
}

export function requestedMaxTokens(request: ChatCompletionRequest): number | undefined {
  return request.max_completion_tokens ?? request.max_tokens ?? undefined;
}
