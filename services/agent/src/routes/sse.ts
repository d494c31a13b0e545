import { openSse, type Logger } from '@clinicalsuite/kit';
import type { Request, Response } from 'express';
import type { TurnEvent } from '../use-cases/streamed-turn.js';

/**
 * The agent's SSE framing of a streamed turn (spec, Events): each event's data is a text fragment,
 * the stream ends with `data: [DONE]`. Intent, model and session id travel in response headers,
 * sent with the first fragment once the answering upstream is known (`x-agent-intent`,
 * `x-agent-model`, `x-agent-session-id`). A reply that comes with data (an intent a sub-service
 * answered: the audio of tts, the codes found...) sends it first as one event named `data`, its JSON
 * the `data` object of the non-streamed reply. A session deleted while the turn ran is said, before
 * `[DONE]`, by an event named `session` (`{session_id, session_deleted: true}`): the exchange was
 * not kept. A failure after the first fragment sends an event named `error` (`{error:{message,code}}`),
 * then `data: [DONE]` like every agent stream; one before it is thrown, for the kit to answer with
 * its status.
 */
export async function sendTurnEvents(
  req: Request,
  res: Response,
  events: AsyncIterable<TurnEvent>,
  log: Logger,
): Promise<void> {
  let sse: ReturnType<typeof openSse> | undefined;
  try {
    for await (const event of events) {
      switch (event.type) {
        case 'start':
          sse = openSse(req, res, {
            headers: {
              'x-agent-intent': event.intent,
              'x-agent-model': event.model,
              'x-agent-session-id': event.session_id,
            },
            doneAfterError: true,
          });
          break;
        case 'data':
          await sse?.event('data', event.data);
          break;
        case 'fragment':
          await sse?.send(event.text);
          break;
        case 'end':
          if (event.recorded.session_deleted === true) {
            void sse?.event('session', { session_id: event.recorded.session_id, session_deleted: true });
          }
          sse?.done();
          break;
      }
    }
  } catch (error) {
    if (sse === undefined) throw error;
    sse.fail(error);
    log.warn({ err: error }, 'stream ended by a failure');
  }
}
