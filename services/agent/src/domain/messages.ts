import { BadRequestError } from '@clinicalsuite/kit';

/**
 * A message longer than AGENT_MAX_MESSAGE_CHARS is refused (400), over HTTP and over the WebSocket
 * alike, whether or not the agent is ready.
 */
export function checkMessageLength(text: string, max: number): void {
  if (text.length > max) {
    throw new BadRequestError(
      `The message is ${text.length} characters long; at most ${max} (AGENT_MAX_MESSAGE_CHARS)`,
      { param: 'message' },
    );
  }
}
