import type { ChatMessage as LlmMessage } from '@clinicalsuite/kit/llm';
import type { ChatMessage } from './types.js';

/** Chat with the task agent: a system prompt, the session's recent history, the new message. */

export const DEFAULT_SYSTEM_PROMPT = [
  "You are ClinicalSuite's task agent, talking with a clinician or a member of the care team.",
  'Answer briefly and precisely, in the language of the message (Vietnamese or English).',
  'You cannot run tools during chat: for work that needs looking things up (medical codes, the reasoning engine) suggest creating a task.',
  'Never invent clinical facts, codes, doses or results; say plainly when you do not know.',
].join('\n');

export function chatMessages(system: string, history: readonly ChatMessage[], message: string): LlmMessage[] {
  return [
    { role: 'system', content: system },
    ...history.map((m) => ({ role: m.role, content: m.content })),
    { role: 'user', content: message },
  ];
}

/** OpenAI messages with the agent's system prompt first unless the caller brought one. */
export function withDefaultSystem(messages: readonly LlmMessage[], system: string): LlmMessage[] {
  return messages.some((m) => m.role === 'system')
    ? [...messages]
    : [{ role: 'system', content: system }, ...messages];
}
