import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * The wire under the HttpClient: node:http(s) with keep-alive pools. Node's fetch would do, but its
 * WHATWG layer (Request, Response, web streams) costs several times more per call, and the agent's
 * LLM path makes one upstream call per request within a small overhead budget.
 * Aborting the signal destroys the request (or the response once it arrived), which closes the
 * connection and so stops the upstream's work.
 */

const POOL = { keepAlive: true, maxSockets: 256, keepAliveMsecs: 30_000, noDelay: true } as const;
const HTTP_AGENT = new HttpAgent(POOL);
const HTTPS_AGENT = new HttpsAgent(POOL);

/** Connection failures that prove the request never reached the server. */
export const NOT_DELIVERED = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
]);

export interface Target {
  readonly https: boolean;
  readonly hostname: string;
  readonly port: number | undefined;
  /** The base URL's path without its trailing slashes, prefixed to every call's path. */
  readonly basePath: string;
}

export interface Exchange {
  readonly method: string;
  readonly path: string;
  readonly headers: OutgoingHttpHeaders;
  readonly payload: Buffer | undefined;
  readonly signal: AbortSignal;
}

/** A failure before the response's headers, with what is known of the request's fate. */
export class SendFailure extends Error {
  constructor(
    readonly error: unknown,
    /** The request may have reached the server (false: the connection was never made). */
    readonly delivered: boolean,
    /** It went out on a kept-alive connection the server may have closed meanwhile. */
    readonly reusedSocket: boolean,
  ) {
    super(error instanceof Error ? error.message : 'the request failed');
    this.name = 'SendFailure';
  }
}

/** Sends the request; resolves with the response once its headers arrived, rejects with a SendFailure. */
export function exchange(target: Target, call: Exchange): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    if (call.signal.aborted) {
      reject(new SendFailure(call.signal.reason, false, false));
      return;
    }
    const req = (target.https ? httpsRequest : httpRequest)(
      {
        hostname: target.hostname,
        port: target.port,
        path: target.basePath + call.path,
        method: call.method,
        agent: target.https ? HTTPS_AGENT : HTTP_AGENT,
        headers: call.headers,
      },
      (res) => {
        call.signal.removeEventListener('abort', onAbort);
        // From here aborting destroys the response, which fails whoever reads its body.
        const onBodyAbort = (): void => void res.destroy(abortError(call.signal));
        if (call.signal.aborted) onBodyAbort();
        else {
          call.signal.addEventListener('abort', onBodyAbort, { once: true });
          res.once('close', () => call.signal.removeEventListener('abort', onBodyAbort));
        }
        resolve(res);
      },
    );
    const onAbort = (): void => void req.destroy(abortError(call.signal));
    call.signal.addEventListener('abort', onAbort, { once: true });
    req.once('error', (error) => {
      call.signal.removeEventListener('abort', onAbort);
      const code = (error as { code?: unknown }).code;
      const delivered = !(typeof code === 'string' && NOT_DELIVERED.has(code)) && !call.signal.aborted;
      reject(new SendFailure(error, delivered, req.reusedSocket));
    });
    req.end(call.payload);
  });
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}
