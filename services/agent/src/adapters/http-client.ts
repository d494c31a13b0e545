import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/**
 * The LLM upstreams' HTTP client: node:http with keep-alive pools rather than fetch. On this path
 * every request of the agent makes one upstream call, and fetch's WHATWG machinery (Request,
 * Response, web streams) costs several times what node:http does, a large share of the agent's
 * added-latency budget (README, "Tests and benchmark"). Bodies are read as Buffers or iterated as a
 * Node stream; aborting the signal destroys the request, which closes the connection and so stops
 * the upstream's work.
 */

const AGENTS = {
  'http:': new HttpAgent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 30_000, noDelay: true }),
  'https:': new HttpsAgent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 30_000, noDelay: true }),
};

export interface HttpCall {
  readonly method: 'GET' | 'POST';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal: AbortSignal;
}

/** Sends the request; resolves with the response once its headers arrived. */
export function send(url: string, call: HttpCall): Promise<IncomingMessage> {
  const target = new URL(url);
  const isHttps = target.protocol === 'https:';
  const payload = call.body === undefined ? undefined : Buffer.from(call.body, 'utf8');
  return new Promise((resolve, reject) => {
    if (call.signal.aborted) {
      reject(abortError(call.signal));
      return;
    }
    const req = (isHttps ? httpsRequest : httpRequest)(
      target,
      {
        method: call.method,
        agent: isHttps ? AGENTS['https:'] : AGENTS['http:'],
        headers: {
          ...call.headers,
          ...(payload === undefined ? {} : { 'content-length': String(payload.length) }),
        },
      },
      (res) => {
        call.signal.removeEventListener('abort', onAbort);
        // From here the body's reader handles aborts (destroying the response).
        const onBodyAbort = (): void => void res.destroy(abortError(call.signal));
        call.signal.addEventListener('abort', onBodyAbort, { once: true });
        res.once('close', () => call.signal.removeEventListener('abort', onBodyAbort));
        resolve(res);
      },
    );
    const onAbort = (): void => {
      req.destroy(abortError(call.signal));
    };
    call.signal.addEventListener('abort', onAbort, { once: true });
    req.once('error', (error) => {
      call.signal.removeEventListener('abort', onAbort);
      reject(error);
    });
    req.end(payload);
  });
}

/** The whole body as text. */
export async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}

export const isOk = (res: IncomingMessage): boolean =>
  res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300;
