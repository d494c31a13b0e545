import { performance } from 'node:perf_hooks';
import {
  BadGatewayError,
  BadRequestError,
  ConflictError,
  HttpClient,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnsupportedMediaTypeError,
  upstreamError,
  ValidationError,
  type FieldIssue,
  type HttpError,
  type Logger,
  type OutboundResult,
} from '@clinicalsuite/kit';
import type { z } from 'zod';
import type { SubserviceId } from '../../domain/subservices.js';
import type { AgentMetrics, SubserviceOutcome } from '../../metrics.js';
import { SUBSERVICE_CATALOGUE, label } from '../../domain/subservice-catalogue.js';
import type { HealthState, SubserviceHealth } from '../../domain/subservices.js';

export type { HealthState, SubserviceHealth };

/**
 * One sub-service over the kit's HttpClient: every call has a deadline (AGENT_SUBSERVICE_TIMEOUT_MS)
 * and stops when the agent's request is aborted (client gone, the agent's own deadline), so a
 * sub-service can slow the agent down but never hang it. Failures become the kit's catalogue errors,
 * each naming the sub-service:
 *
 * - not configured (its `<NAME>_URL` unset): 503 naming the variable;
 * - unreachable (connection refused, DNS, reset): 502 with the cause (`ECONNREFUSED`);
 * - no answer within the deadline, or its own 504: 502 saying it timed out (the spec's Errors give
 *   the agent 502 for a sub-service that "timed out or failed"; 504 stays the agent's own request
 *   deadline);
 * - its 5xx: 502, except its 503 (not ready: passed on as 503 with its reason and Retry-After);
 * - its 4xx (the caller's input: 400, 404, 409, 413, 415, 422, 429): the same status with the
 *   sub-service's own message prefixed by its id (`stt: ...`); 422 keeps its field list. Its 401/403
 *   means the agent's credentials for it are wrong: 502.
 *
 * Metrics: `agent_subservice_requests_total{subservice,outcome}` and
 * `agent_subservice_request_duration_seconds{subservice}` for every call that was attempted (and
 * the kit's `http_client_*` for every exchange, health checks included). Logs
 * carry the sub-service, status, outcome and time, never the bodies (clinical data).
 */

export interface EndpointDeps {
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  /** Deadline of one call. */
  readonly timeoutMs: number;
  /** The bearer token it accepts; without one, a `user:token@` part of the URL, if any. */
  readonly token?: string | undefined;
}

export interface JsonRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  /** A JSON value (sent as application/json) or a multipart form. */
  readonly body?: unknown;
}

export class SubserviceEndpoint {
  readonly id: SubserviceId;
  /** The base URL without credentials, for messages, logs and /status; null when not configured. */
  readonly displayUrl: string | null;
  private readonly http: HttpClient | null;

  constructor(
    id: SubserviceId,
    url: string | undefined,
    private readonly deps: EndpointDeps,
  ) {
    this.id = id;
    if (url === undefined) {
      this.http = null;
      this.displayUrl = null;
      return;
    }
    // A `user:token@` part of the URL is the bearer token when none is given.
    this.http = new HttpClient({
      name: id,
      baseUrl: url,
      label: capital(label(id)),
      ...(deps.token === undefined ? {} : { token: deps.token }),
      timeoutMs: deps.timeoutMs,
      metrics: deps.metrics.registry,
    });
    this.displayUrl = this.http.baseUrl;
  }

  get configured(): boolean {
    return this.http !== null;
  }

  /** Throws (and counts) the 503 naming the variable when the sub-service is not configured. */
  ensureConfigured(): void {
    if (this.http !== null) return;
    this.deps.metrics.subserviceRequests.inc({ subservice: this.id, outcome: 'not_configured' });
    throw notConfigured(this.id);
  }

  /**
   * One call; resolves with the body parsed by `schema` (a 2xx answer), or throws a catalogue error
   * that names the sub-service. `signal` is the agent request's.
   */
  async call<S extends z.ZodType>(
    request: JsonRequest,
    schema: S,
    signal: AbortSignal,
  ): Promise<z.output<S>> {
    const { metrics } = this.deps;
    this.ensureConfigured();
    const http = this.http as HttpClient;
    const started = performance.now();
    const finish = (outcome: SubserviceOutcome, status: number | null): void => {
      const seconds = (performance.now() - started) / 1000;
      metrics.subserviceRequests.inc({ subservice: this.id, outcome });
      metrics.subserviceDuration.observe({ subservice: this.id }, seconds);
      const line = {
        subservice: this.id,
        path: request.path,
        status,
        outcome,
        ms: Math.round(seconds * 1000),
      };
      if (outcome === 'ok' || outcome === 'aborted' || (status !== null && status < 500)) {
        this.deps.logger.debug(line, 'sub-service call');
      } else {
        this.deps.logger.warn(line, 'sub-service call failed');
      }
    };
    let failed: SubserviceOutcome = 'unavailable';
    let res: OutboundResult;
    try {
      res = await http.request({
        method: request.method,
        path: request.path,
        ...(request.body === undefined
          ? {}
          : request.body instanceof FormData
            ? { body: request.body }
            : { json: request.body }),
        signal,
        failures: {
          timeout: () => {
            failed = 'timeout';
            return new BadGatewayError(
              `${capital(label(this.id))} timed out: no answer within ${this.deps.timeoutMs} ms (AGENT_SUBSERVICE_TIMEOUT_MS)`,
            );
          },
          unreachable: (f) =>
            new BadGatewayError(
              `${capital(label(this.id))} at ${this.displayUrl ?? ''} is unreachable (${f.cause})`,
            ),
        },
      });
    } catch (error) {
      finish(signal.aborted ? 'aborted' : failed, null);
      throw error;
    }
    if (!res.ok) {
      const failure = this.statusFailure(res, http.redact(res.text));
      finish(res.status === 503 ? 'unavailable' : res.status === 504 ? 'timeout' : 'error', res.status);
      throw failure;
    }
    let json: unknown;
    try {
      json = JSON.parse(res.text);
    } catch {
      finish('error', res.status);
      throw new BadGatewayError(
        `${capital(label(this.id))} answered ${request.path} with something other than JSON`,
      );
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      finish('error', res.status);
      const issue = parsed.error.issues[0];
      const where = issue === undefined ? '' : `: ${issue.path.join('.') || '(body)'}: ${issue.message}`;
      throw new BadGatewayError(
        `${capital(label(this.id))} answered ${request.path} with an unexpected body${where}`,
      );
    }
    finish('ok', res.status);
    return parsed.data;
  }

  /** GET /health within `timeoutMs`: up (2xx), not_ready (503, with its reason) or down. Never throws. */
  async health(signal: AbortSignal, timeoutMs: number): Promise<SubserviceHealth> {
    const base = { id: this.id, name: SUBSERVICE_CATALOGUE[this.id].name, url: this.displayUrl };
    if (this.http === null) {
      return {
        ...base,
        state: 'not_configured',
        latency_ms: null,
        detail: `not configured: set ${SUBSERVICE_CATALOGUE[this.id].envVar}`,
      };
    }
    const started = performance.now();
    const elapsed = (): number => Math.round((performance.now() - started) * 10) / 10;
    try {
      const res = await this.http.request({
        path: '/health',
        signal,
        timeoutMs,
        retries: 0,
        failures: {
          timeout: () => new HealthFailure(`no answer within ${timeoutMs} ms (AGENT_STATUS_TIMEOUT_MS)`),
          unreachable: (f) => new HealthFailure(`unreachable (${f.cause})`),
        },
      });
      const latency = elapsed();
      if (res.ok) return { ...base, state: 'up', latency_ms: latency, detail: null };
      const said = messageOf(this.http.redact(res.text))?.message;
      if (res.status === 503) {
        return { ...base, state: 'not_ready', latency_ms: latency, detail: said ?? 'not ready (503)' };
      }
      const why =
        res.status === 401 || res.status === 403
          ? `refused the agent's credentials (${res.status})`
          : `answered /health with ${res.status}`;
      return {
        ...base,
        state: 'down',
        latency_ms: latency,
        detail: said === undefined ? why : `${why}: ${said}`,
      };
    } catch (error) {
      const latency = elapsed();
      const detail = error instanceof HealthFailure ? error.message : 'check cancelled';
      return { ...base, state: 'down', latency_ms: latency, detail };
    }
  }

  private statusFailure(res: OutboundResult, text: string): HttpError {
    const said = messageOf(text);
    const message = said?.message ?? `no message (${res.status})`;
    const prefixed = `${this.id}: ${message}`;
    const who = capital(label(this.id));
    const retryAfter = Number(res.headers['retry-after'] ?? '5');
    const after = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : 5;
    switch (res.status) {
      case 400:
        return new BadRequestError(prefixed, { code: `${this.id}_bad_request` });
      case 401:
      case 403:
        return new BadGatewayError(
          `${who} refused the agent's credentials (${res.status}): give the agent a token it accepts (as user info in ${SUBSERVICE_CATALOGUE[this.id].envVar})`,
        );
      case 404:
        return new NotFoundError(prefixed);
      case 409:
        return new ConflictError(prefixed);
      case 413:
        return new PayloadTooLargeError(prefixed);
      case 415:
        return new UnsupportedMediaTypeError(prefixed);
      case 422:
        return new ValidationError(
          said?.issues?.map((i) => ({ ...i, msg: `${this.id}: ${i.msg}` })) ?? [
            { loc: ['body'], msg: prefixed, type: 'subservice' },
          ],
        );
      case 429:
        return new TooManyRequestsError(`${this.id} is busy: ${message}`, after);
      case 503:
        return new ServiceUnavailableError(`${who} is not available (503): ${message}`, after);
      case 504:
        return new BadGatewayError(`${who} timed out (504): ${message}`);
      default:
        return new BadGatewayError(
          res.status >= 500
            ? `${who} failed (${res.status}): ${message}`
            : `${who} refused the agent's request (${res.status}): ${message}`,
        );
    }
  }
}

export function notConfigured(id: SubserviceId): ServiceUnavailableError {
  const envVar = SUBSERVICE_CATALOGUE[id].envVar;
  return new ServiceUnavailableError(
    `${capital(label(id))} is not configured: set ${envVar} to its base URL`,
    60,
  );
}

/** Why a health check found the sub-service down, as its detail. */
class HealthFailure extends Error {}

/** The message of an error body (and a 422's field list), as the kit reads the suite's shapes. */
export function messageOf(text: string): { message: string; issues?: FieldIssue[] } | undefined {
  return upstreamError(text, { issueType: 'subservice' });
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
