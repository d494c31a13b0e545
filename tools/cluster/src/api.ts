/**
 * The few API calls the cluster CLI makes (readiness, server-side apply of its fixtures, reads),
 * over node:https with the cluster's own CA and admin token. Small on purpose: the CLI must work
 * before anything else of the operator does, and needs no Kubernetes client library.
 */
import { request } from 'node:https';

export const FIELD_MANAGER = 'clinicalsuite-cluster';

export interface ApiResponse {
  status: number;
  body: string;
}

export interface Endpoint {
  server: string;
  ca?: string;
  token?: string;
  /** For the controller-manager's and scheduler's self-signed health endpoints only. */
  insecure?: boolean;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    body: string,
  ) {
    let message = body.trim();
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) message = status.message;
    } catch {
      /* not a Status object */
    }
    super(`${method} ${path}: ${status} ${message.slice(0, 500)}`);
  }
}

export function call(
  endpoint: Endpoint,
  method: string,
  path: string,
  body?: string,
  contentType = 'application/json',
  timeoutMs = 10_000,
): Promise<ApiResponse> {
  const url = new URL(path, endpoint.server);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (endpoint.token) headers['authorization'] = `Bearer ${endpoint.token}`;
    if (body !== undefined) headers['content-type'] = contentType;
    const req = request(
      url,
      {
        method,
        headers,
        ...(endpoint.ca ? { ca: endpoint.ca } : {}),
        rejectUnauthorized: !endpoint.insecure,
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.href} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** GET, parsed; undefined on 404. */
export async function get<T>(endpoint: Endpoint, path: string): Promise<T | undefined> {
  const res = await call(endpoint, 'GET', path);
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new ApiError(res.status, 'GET', path, res.body);
  return JSON.parse(res.body) as T;
}

/** Server-side apply of `object` at `path` (an object's own URL, or its /status). */
export async function apply(endpoint: Endpoint, path: string, object: object): Promise<void> {
  const query = `?fieldManager=${FIELD_MANAGER}&force=true`;
  const res = await call(
    endpoint,
    'PATCH',
    path + query,
    JSON.stringify(object),
    'application/apply-patch+yaml',
  );
  if (res.status !== 200 && res.status !== 201) throw new ApiError(res.status, 'PATCH', path, res.body);
}
