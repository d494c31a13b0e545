import { ClientClosedRequestError } from '@clinicalsuite/kit';
import type { ConcreteIntent } from '../domain/types.js';
import type { Transport } from './ports.js';
import {
  prepareTurn,
  recordTurn,
  type RecordedTurn,
  type TurnDeps,
  type TurnReply,
  type TurnRequest,
} from './turn.js';

/**
 * A turn streamed as it is generated, as events a transport renders (SSE, WebSocket frames):
 * `start` once the answering upstream is known, the reply's `data` when it has some (an intent a
 * sub-service answered), its text `fragment`s, and `end` with where the exchange went. The session
 * is touched only once the reply completed, as for a turn answered whole (turn.ts).
 */

export type TurnEvent =
  /** Before the first fragment, once the answering upstream is known. */
  | {
      readonly type: 'start';
      readonly intent: ConcreteIntent;
      readonly model: string;
      readonly session_id: string;
    }
  /** A reply's data (a sub-service's result: audio, codes...), after `start`, before the text. */
  | { readonly type: 'data'; readonly data: Record<string, unknown> }
  | { readonly type: 'fragment'; readonly text: string }
  /**
   * The reply completed, and where its exchange went: a session deleted while the turn ran
   * (`session_deleted`) is said before the end, as the reply answered whole says it.
   */
  | { readonly type: 'end'; readonly recorded: RecordedTurn };

/**
 * Streams a turn. The first step fails, before any event, when no upstream could start the reply
 * (the transport answers with the error's status); a later one with the failure (the transport ends
 * the stream with an error). Cut short (deadline, client gone) while the transport waited, it fails
 * too, never ends quietly.
 */
export async function* streamTurn(
  deps: TurnDeps,
  req: TurnRequest,
  signal: AbortSignal,
  transport: Transport,
): AsyncGenerator<TurnEvent, void, undefined> {
  const { sessionId, started, call } = prepareTurn(deps, req);
  const stream = await deps.router.stream(call, signal);
  yield { type: 'start', intent: req.intent, model: stream.model, session_id: sessionId };
  const open = deps.metrics.streamsOpen.labels({ transport });
  open.inc();
  let text = '';
  try {
    for await (const fragment of stream) {
      if (signal.aborted) break;
      text += fragment;
      yield { type: 'fragment', text: fragment };
    }
  } finally {
    open.dec();
  }
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new ClientClosedRequestError();
  yield {
    type: 'end',
    recorded: recordTurn(deps, sessionId, req.text, text, req.intent, stream.model, started),
  };
}

/**
 * A reply that is already whole (an intent a sub-service or the shell answered) as the same events:
 * its metadata, its data when it has some, its text as one fragment, the end. One framing for every
 * reply, so a client needs one code path; the data is what the reply answered whole carries.
 */
export function* wholeReplyEvents(reply: TurnReply): Generator<TurnEvent, void, undefined> {
  yield { type: 'start', intent: reply.intent, model: reply.model, session_id: reply.session_id };
  if (reply.data !== undefined) yield { type: 'data', data: reply.data };
  yield { type: 'fragment', text: reply.response };
  yield { type: 'end', recorded: reply };
}
