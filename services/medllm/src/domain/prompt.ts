import { BadRequestError } from '@clinicalsuite/kit';
import type { ChatMessage, ContentPart } from '../schemas/chat-completions.js';

/**
 * The conversation the backend sees: the deployment's system prompt first, then the client's
 * system (and developer) messages after it in the same leading system turn (a client cannot
 * replace the deployment's), then the other turns in order. Image parts are placeholders here
 * (`imageSlot`); the route fills them with the checked images.
 */

export interface ImageRef {
  readonly param: string;
  readonly url: string;
}

export type PlannedPart =
  { readonly type: 'text'; readonly text: string } | { readonly type: 'image'; readonly ref: ImageRef };

export interface PlannedMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly parts: readonly PlannedPart[];
}

export interface Plan {
  readonly messages: readonly PlannedMessage[];
  readonly images: readonly ImageRef[];
  /** Every text the client sent, for the certainty guard's "stated in the prompt" check. */
  readonly promptText: string;
}

export function planConversation(messages: readonly ChatMessage[], systemPrompt: string): Plan {
  const system: string[] = systemPrompt.trim() === '' ? [] : [systemPrompt.trim()];
  const turns: PlannedMessage[] = [];
  const images: ImageRef[] = [];
  const texts: string[] = [];
  messages.forEach((message, i) => {
    const parts =
      typeof message.content === 'string'
        ? [{ type: 'text' as const, text: message.content }]
        : message.content;
    if (message.role === 'system' || message.role === 'developer' || message.role === 'assistant') {
      const image = parts.findIndex((p) => p.type === 'image_url');
      if (image >= 0) {
        throw new BadRequestError(
          `messages[${i}].content[${image}]: images are accepted in user messages only`,
          {
            param: `messages[${i}].content[${image}]`,
            code: 'invalid_image_placement',
          },
        );
      }
    }
    const planned = parts.map((part: ContentPart, j): PlannedPart => {
      if (part.type === 'text') {
        texts.push(part.text);
        return part;
      }
      const ref = { param: `messages[${i}].content[${j}]`, url: part.image_url.url };
      images.push(ref);
      return { type: 'image', ref };
    });
    if (message.role === 'system' || message.role === 'developer') {
      system.push(planned.map((p) => (p.type === 'text' ? p.text : '')).join('\n'));
      return;
    }
    turns.push({ role: message.role, parts: planned });
  });
  if (!turns.some((t) => t.role === 'user')) {
    throw new BadRequestError('messages: at least one user message is required', {
      param: 'messages',
      code: 'invalid_messages',
    });
  }
  return {
    messages: [
      ...(system.length > 0
        ? [{ role: 'system' as const, parts: [{ type: 'text' as const, text: system.join('\n\n') }] }]
        : []),
      ...turns,
    ],
    images,
    promptText: texts.join('\n'),
  };
}

/** Whether prompt plus completion fits the context; the 400 says by how much it does not. */
export function checkContext(input: {
  readonly textTokens: number;
  readonly images: number;
  readonly imageTokens: number;
  readonly maxTokens: number;
  readonly contextSize: number;
}): number {
  const promptTokens = input.textTokens + input.images * input.imageTokens;
  const needed = promptTokens + input.maxTokens;
  if (needed > input.contextSize) {
    const imagePart =
      input.images === 0
        ? ''
        : ` (${input.textTokens} of text and ${input.images} image(s) at ${input.imageTokens} each)`;
    throw new BadRequestError(
      `The request does not fit the context: ${promptTokens} prompt tokens${imagePart} plus max_tokens ` +
        `${input.maxTokens} make ${needed}, ${needed - input.contextSize} over the context of ${input.contextSize} tokens; ` +
        'shorten the conversation, send fewer images or lower max_tokens',
      { param: 'messages', code: 'context_length_exceeded' },
    );
  }
  return promptTokens;
}
