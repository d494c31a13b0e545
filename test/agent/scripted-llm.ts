import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * An OpenAI-compatible upstream whose behaviour a test sets: what the real LLM cannot be made to do
 * on demand (go silent in the middle of a stream, fail the next call) or where a test must read the
 * exact prompt the agent sent. Everything else in the agent's tests runs against the real LLM.
 */

export type Script =
  /**
   * Answers `text`; streamed in `fragments` pieces, `delayMs` apart, silent after `stallAfter`. Not
   * streamed: after `delayMs`.
   */
  | {
      readonly kind: 'reply';
      readonly text: string;
      readonly fragments?: readonly string[];
      readonly delayMs?: number;
      readonly stallAfter?: number;
    }
  /** Answers this status and body (OpenAI's error shape) to every completion. */
  | { readonly kind: 'status'; readonly status: number; readonly body: unknown };

export interface ScriptedCall {
  readonly model: string;
  readonly messages: { role: string; content: string }[];
  readonly stream: boolean;
}

export interface ScriptedLlm {
  readonly url: string;
  /** The completion requests received, in order. */
  readonly calls: ScriptedCall[];
  script: Script;
  close(): Promise<void>;
}

export const SCRIPTED_MODEL = 'scripted-model';

export async function startScriptedLlm(script: Script = { kind: 'reply', text: 'ok' }): Promise<ScriptedLlm> {
  const sockets = new Set<Socket>();
  const state: ScriptedLlm = {
    url: '',
    calls: [],
    script,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => void answer(state, req, res));
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return Object.assign(state, { url: `http://127.0.0.1:${port}` });
}

async function answer(state: ScriptedLlm, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let raw = '';
  for await (const chunk of req) raw += (chunk as Buffer).toString('utf8');
  const json = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.url === '/health') {
    json(200, { status: 'healthy' });
    return;
  }
  if (req.url === '/v1/models') {
    json(200, { object: 'list', data: [{ id: SCRIPTED_MODEL, object: 'model', owned_by: 'test' }] });
    return;
  }
  if (req.url !== '/v1/chat/completions') {
    json(404, { detail: 'Not Found' });
    return;
  }
  const body = JSON.parse(raw) as ScriptedCall;
  state.calls.push({ model: body.model, messages: body.messages, stream: body.stream });
  const script = state.script;
  if (script.kind === 'status') {
    json(script.status, script.body);
    return;
  }
  if (!body.stream) {
    if (script.delayMs !== undefined) await new Promise((r) => setTimeout(r, script.delayMs));
    json(200, {
      id: 'chatcmpl-scripted',
      object: 'chat.completion',
      created: 0,
      model: SCRIPTED_MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: script.text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    });
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
    `data: ${JSON.stringify({ model: SCRIPTED_MODEL, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const pieces = script.fragments ?? [script.text];
  for (const [i, piece] of pieces.entries()) {
    if (res.destroyed) return;
    if (i > 0 && script.delayMs !== undefined) await new Promise((r) => setTimeout(r, script.delayMs));
    res.write(chunk({ content: piece }));
    if (script.stallAfter !== undefined && i + 1 >= script.stallAfter) return; // silent, connection open
  }
  res.write(chunk({}, 'stop'));
  res.end('data: [DONE]\n\n');
}
