import type { IncomingMessage, Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import {
  ClientClosedRequestError,
  GatewayTimeoutError,
  ServiceUnavailableError,
  checkBearer,
  toHttpError,
  type AuthOptions,
  type ConcurrencyGate,
  type Logger,
  type ReadinessSignal,
} from '@clinicalsuite/kit';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { z } from 'zod';
import type { AgentConfig } from '../config.js';
import { checkMessageLength } from '../domain/messages.js';
import { INTENTS, UPSTREAM_IDS } from '../domain/types.js';
import type { AgentMetrics } from '../metrics.js';
import { LanguageSchema, SessionIdSchema } from '../schemas/api.js';
import type { MessageUseCase } from '../use-cases/message.js';
import type { TurnEvent } from '../use-cases/streamed-turn.js';

/**
 * `WS /ws/chat` (spec, Events): the client authenticates with `?token=` or with a first frame
 * `{type:'auth', token}`; the server answers `{type:'auth_ok'}`. A failed authentication, or none
 * within AGENT_WS_AUTH_TIMEOUT_MS, closes the socket with 1008 (policy violation) and a reason,
 * before any work. Sockets still waiting for their auth frame are capped per client address
 * (AGENT_WS_MAX_PENDING_PER_IP) and in all (AGENT_WS_MAX_PENDING): past a cap a new one is closed at
 * once with 1013 (try again later), so unauthenticated sockets cannot pile up; a client with the
 * token in the query is never pending. Then each JSON message
 * (`message`, `session_id`, `language`, `force_intent`, `force_llm`) gets a metadata frame
 * `{type:'metadata', intent, model, session_id}`, for an intent a sub-service answered its data as
 * `{type:'data', data}` (what the non-streamed reply has in `data`: tts's audio...), the reply's
 * text fragments as text frames, and the frame `[DONE]`. A failure is a frame `{type:'error',
 * status, code, message}` followed by `[DONE]`. Messages on one socket are answered in order;
 * closing the socket stops the generation in flight.
 */

export const WS_PATH = '/ws/chat';
/** RFC 6455 close codes (1013, try again later, from IANA's registry). */
export const CLOSE_POLICY = 1008;
export const CLOSE_TRY_AGAIN_LATER = 1013;
const CLOSE_GOING_AWAY = 1001;
const PING_MS = 30_000;

const AuthFrameSchema = z.object({ type: z.literal('auth'), token: z.string().min(1) });

export const WsMessageSchema = z.object({
  message: z.string().min(1),
  session_id: SessionIdSchema.nullable().default(null),
  language: LanguageSchema.default('vi'),
  force_intent: z.enum(INTENTS).nullable().default(null),
  force_llm: z.enum(UPSTREAM_IDS).nullable().default(null),
  patient_id: z.string().min(1).max(200).optional(),
});

export interface ChatSocketOptions {
  readonly config: AgentConfig;
  /** The tokens, and the scopes one of which a token needs. */
  readonly auth: AuthOptions;
  readonly readiness: ReadinessSignal;
  readonly gate: ConcurrencyGate;
  readonly metrics: Pick<AgentMetrics, 'wsConnections' | 'wsAuthFailures'>;
  readonly logger: Logger;
  /** Each message is answered by `useCases.message`. */
  readonly useCases: { readonly message: MessageUseCase };
}

export interface ChatSocket {
  /** Serves `WS /ws/chat` on the listening server. */
  readonly attach: (server: Server) => void;
  /** Closes every connection (1001) and stops their work; a server attached later is not served. */
  readonly close: () => void;
}

/**
 * Sockets waiting for their auth frame, per client address and in all. `take` answers why a new
 * one is refused, or null when it may wait (then `release` must follow, once).
 */
class PendingSockets {
  private readonly byAddress = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perAddress: number,
    private readonly max: number,
  ) {}

  take(address: string): 'per_ip' | 'total' | null {
    const mine = this.byAddress.get(address) ?? 0;
    if (mine >= this.perAddress) return 'per_ip';
    if (this.total >= this.max) return 'total';
    this.byAddress.set(address, mine + 1);
    this.total++;
    return null;
  }

  release(address: string): void {
    const left = (this.byAddress.get(address) ?? 1) - 1;
    if (left > 0) this.byAddress.set(address, left);
    else this.byAddress.delete(address);
    this.total--;
  }
}

export function chatSocket(options: ChatSocketOptions): ChatSocket {
  const { config } = options;
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: Math.max(64 * 1024, config.AGENT_MAX_MESSAGE_CHARS * 4 + 4096),
  });
  const pending = new PendingSockets(config.AGENT_WS_MAX_PENDING_PER_IP, config.AGENT_WS_MAX_PENDING);
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(req.url ?? '/', 'http://agent');
    if (url.pathname !== WS_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const token = url.searchParams.get('token');
      new Connection(
        ws,
        options,
        token === '' ? null : token,
        pending,
        req.socket.remoteAddress ?? 'unknown',
      ).start();
    });
  };
  let attached: Server | undefined;
  let closed = false;
  return {
    attach: (server) => {
      if (closed) return;
      attached = server;
      server.on('upgrade', onUpgrade);
    },
    close: () => {
      closed = true;
      attached?.off('upgrade', onUpgrade);
      for (const client of wss.clients) client.close(CLOSE_GOING_AWAY, 'server shutting down');
      wss.close();
    },
  };
}

class Connection {
  private authed = false;
  private readonly queue: unknown[] = [];
  private busy = false;
  private current: AbortController | undefined;
  private readonly closed = new AbortController();
  private alive = true;

  /** Whether this socket holds a place among the pending ones (until it authenticates or closes). */
  private holdsPending = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: ChatSocketOptions,
    private readonly queryToken: string | null,
    private readonly pending: PendingSockets,
    private readonly address: string,
  ) {}

  start(): void {
    const { metrics, logger, config } = this.options;
    metrics.wsConnections.inc();
    this.ws.on('close', () => {
      metrics.wsConnections.dec();
      this.releasePending();
      this.closed.abort(new ClientClosedRequestError());
      this.current?.abort(new ClientClosedRequestError());
      clearInterval(ping);
    });
    this.ws.on('pong', () => {
      this.alive = true;
    });
    const ping = setInterval(() => {
      if (!this.alive) {
        this.ws.terminate();
        return;
      }
      this.alive = false;
      this.ws.ping();
    }, PING_MS);
    ping.unref();
    this.ws.on('error', (error) => logger.debug({ err: error }, 'websocket error'));
    if (this.queryToken !== null) {
      if (!this.authenticate(this.queryToken)) return;
    } else {
      const full = this.pending.take(this.address);
      if (full !== null) {
        metrics.wsAuthFailures.inc({ reason: `pending_${full}` });
        logger.warn(
          { ip: this.address, cap: full },
          'websocket refused: too many sockets waiting for authentication',
        );
        this.ws.close(
          CLOSE_TRY_AGAIN_LATER,
          full === 'per_ip'
            ? 'too many unauthenticated sockets from this address: authenticate the open ones first'
            : 'too many unauthenticated sockets: try again later',
        );
        return;
      }
      this.holdsPending = true;
      const timer = setTimeout(() => {
        if (!this.authed)
          this.refuse('timeout', 'authentication required: send {"type":"auth","token":...} first');
      }, config.AGENT_WS_AUTH_TIMEOUT_MS);
      timer.unref();
      this.ws.once('close', () => clearTimeout(timer));
    }
    this.ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      if (!this.authed)
        this.refuse('bad_frame', 'authentication required: the first frame must be a JSON auth frame');
      else this.sendError(400, 'bad_request', 'Send messages as JSON text frames');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawText(data));
    } catch {
      parsed = undefined;
    }
    if (!this.authed) {
      const frame = AuthFrameSchema.safeParse(parsed);
      if (!frame.success) {
        this.refuse(
          'bad_frame',
          'authentication required: the first frame must be {"type":"auth","token":...}',
        );
        return;
      }
      this.authenticate(frame.data.token);
      return;
    }
    if (parsed === undefined) {
      this.sendError(400, 'bad_request', 'The frame is not JSON');
      this.send('[DONE]');
      return;
    }
    this.queue.push(parsed);
    void this.drain();
  }

  /** Checks a token; on failure closes with 1008 and the reason. */
  private authenticate(token: string): boolean {
    const check = checkBearer(this.options.auth.tokens, this.options.auth.scopes ?? [], token);
    if (check !== 'ok') {
      this.refuse(check, check === 'invalid' ? 'invalid token' : 'the token lacks the ai_agent scope');
      return false;
    }
    this.authed = true;
    this.releasePending();
    this.send(JSON.stringify({ type: 'auth_ok' }));
    return true;
  }

  private releasePending(): void {
    if (!this.holdsPending) return;
    this.holdsPending = false;
    this.pending.release(this.address);
  }

  private refuse(reason: string, message: string): void {
    this.options.metrics.wsAuthFailures.inc({ reason });
    this.options.logger.info({ reason }, 'websocket authentication failed');
    this.ws.close(CLOSE_POLICY, message.slice(0, 120));
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0 && !this.closed.signal.aborted) {
        await this.answer(this.queue.shift());
      }
    } finally {
      this.busy = false;
    }
  }

  private async answer(frame: unknown): Promise<void> {
    const { config, readiness, gate, logger } = this.options;
    const body = WsMessageSchema.safeParse(frame);
    if (!body.success) {
      const fields = body.error.issues
        .map((i) => `${i.path.join('.') || '(frame)'}: ${i.message}`)
        .join('; ');
      this.sendError(422, 'validation_error', `Invalid message: ${fields}`);
      this.send('[DONE]');
      return;
    }
    const receivedAt = performance.now();
    const controller = new AbortController();
    this.current = controller;
    const deadline = setTimeout(
      () =>
        controller.abort(
          new GatewayTimeoutError(`The request exceeded the ${config.REQUEST_TIMEOUT_MS} ms deadline`),
        ),
      config.REQUEST_TIMEOUT_MS,
    );
    const signal = AbortSignal.any([controller.signal, this.closed.signal]);
    let release: (() => void) | undefined;
    try {
      // The same limit as over HTTP (maxPayload only bounds the frame's bytes, about 4x it); a
      // message too long is refused as such whether or not the agent is ready.
      checkMessageLength(body.data.message, config.AGENT_MAX_MESSAGE_CHARS);
      if (!readiness.ready)
        throw new ServiceUnavailableError(`Service not ready: ${readiness.reason ?? 'starting'}`);
      release = await gate.acquire(signal);
      const b = body.data;
      const events = this.options.useCases.message.stream(
        {
          text: b.message,
          language: b.language,
          sessionId: b.session_id,
          force: b.force_intent,
          prefer: b.force_llm,
          patientId: b.patient_id,
        },
        { signal, log: logger, since: receivedAt },
        'ws',
      );
      for await (const event of events) await this.render(event, signal);
    } catch (error) {
      if (this.closed.signal.aborted) return;
      const e = toHttpError(signal.aborted && signal.reason instanceof Error ? signal.reason : error);
      if (e.status >= 500) logger.warn({ err: error, status: e.status }, 'websocket reply failed');
      this.sendError(e.status, e.code, e.message);
      this.send('[DONE]');
    } finally {
      clearTimeout(deadline);
      release?.();
      this.current = undefined;
    }
  }

  /** One event of a reply as frames: metadata, data, text fragments, `[DONE]`. */
  private async render(event: TurnEvent, signal: AbortSignal): Promise<void> {
    switch (event.type) {
      case 'start':
        this.send(
          JSON.stringify({
            type: 'metadata',
            intent: event.intent,
            model: event.model,
            session_id: event.session_id,
          }),
        );
        return;
      case 'data':
        return this.sendAndWait(JSON.stringify({ type: 'data', data: event.data }), signal);
      case 'fragment':
        return this.sendAndWait(event.text, signal);
      case 'end':
        if (event.recorded.session_deleted === true) {
          this.send(
            JSON.stringify({ type: 'session', session_id: event.recorded.session_id, session_deleted: true }),
          );
        }
        this.send('[DONE]');
        return;
    }
  }

  private send(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  /**
   * Sends and waits while the socket's buffer is full (back-pressure), but no longer than the
   * turn: when `signal` aborts (the deadline, the socket closing) the wait ends, so the turn fails
   * and its error frame and [DONE] are queued behind what the client has not read yet.
   */
  private async sendAndWait(text: string, signal: AbortSignal): Promise<void> {
    if (this.ws.readyState !== WebSocket.OPEN || signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      this.ws.send(text, done);
    });
  }

  private sendError(status: number, code: string, message: string): void {
    this.send(JSON.stringify({ type: 'error', status, code, message }));
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}
