import { openSse } from '@clinicalsuite/kit';
import type { Request, Response } from 'express';
import type { FragmentSink } from './turns.js';

/**
 * The agent's SSE framing (spec, Events): each event's data is a text fragment, the stream ends with
 * `data: [DONE]`. Intent, model and session id travel in response headers, sent with the first
 * fragment once the answering upstream is known (`x-agent-intent`, `x-agent-model`,
 * `x-agent-session-id`). A reply that comes with data (an intent a sub-service answered: the audio
 * of tts, the codes found...) sends it first as one event named `data`, its JSON the `data` object
 * of the non-streamed reply. A session deleted while the turn ran is said, before `[DONE]`, by an
 * event named `session` (`{session_id, session_deleted: true}`): the exchange was not kept. A failure
 * after the first fragment sends an event named `error` (`{error:{message,code}}`), then
 * `data: [DONE]` like every agent stream.
 */
export function sseSink(req: Request, res: Response): FragmentSink & { fail(error: unknown): void } {
  let sse: ReturnType<typeof openSse> | undefined;
  return {
    start(meta) {
      sse = openSse(req, res, {
        headers: {
          'x-agent-intent': meta.intent,
          'x-agent-model': meta.model,
          'x-agent-session-id': meta.session_id,
        },
        doneAfterError: true,
      });
    },
    fragment: (text) => sse?.send(text) ?? Promise.resolve(),
    data: (data) => sse?.event('data', data) ?? Promise.resolve(),
    end(recorded) {
      if (recorded.session_deleted === true) {
        void sse?.event('session', { session_id: recorded.session_id, session_deleted: true });
      }
      sse?.done();
    },
    fail(error) {
      if (sse === undefined) throw error;
      sse.fail(error);
    },
  };
}
