/**
 * The only code that talks to the API server. Writes are server-side apply with one field manager
 * and force (docs/architecture.md §3); status goes through the `/status` subresource. Every write is
 * counted, so tests and the benchmark can prove a no-op reconcile writes nothing.
 *
 * Requests are plain JSON over HTTPS with the kubeconfig's credentials: client-node's typed
 * serializer rewrites objects into its model classes (it drops a NetworkPolicy rule's `from`, which
 * it calls `_from`), so the builders' wire objects are sent as they are.
 */
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../api/v1alpha1/index.js';
import { resourcePath, type ObjectRef } from './paths.js';

export type { ObjectRef } from './paths.js';
/** What `readMetadata` asks for: the object's metadata as a meta.k8s.io/v1 PartialObjectMetadata. */
const PARTIAL_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

export type WriteVerb = 'apply' | 'apply-status' | 'delete' | 'create' | 'replace';

export class KubeApiError extends Error {
  /** The API server's own message (the Status object's), without the request line. */
  readonly detail: string;

  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    detail?: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
    this.detail = detail ?? message;
  }
}

export interface KubeObjectLike {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

export class KubeClient {
  private writeCount = 0;

  constructor(
    readonly kubeConfig: KubeConfig,
    private readonly onWrite?: (verb: WriteVerb, kind: string) => void,
  ) {}

  /** API writes made so far. */
  get writes(): number {
    return this.writeCount;
  }

  /** Server-side apply of `obj` (force: this operator owns the fields it sets). */
  async apply<T extends KubeObjectLike>(obj: T): Promise<T> {
    this.count('apply', obj.kind);
    return (await this.send(
      'PATCH',
      `${resourcePath(obj)}?fieldManager=${FIELD_MANAGER}&force=true`,
      obj,
    )) as T;
  }

  /** Server-side apply of an object's `status` through the status subresource. */
  async applyStatus(ref: ObjectRef, status: unknown): Promise<void> {
    this.count('apply-status', ref.kind);
    const body = {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.metadata.name, namespace: ref.metadata.namespace },
      status,
    };
    await this.send('PATCH', `${resourcePath(ref)}/status?fieldManager=${FIELD_MANAGER}&force=true`, body);
  }

  /** Deletes `ref` in the background (garbage collection takes its dependents); absent is fine. */
  async delete(ref: ObjectRef): Promise<void> {
    this.count('delete', ref.kind);
    try {
      await this.send('DELETE', resourcePath(ref), {
        kind: 'DeleteOptions',
        apiVersion: 'v1',
        propagationPolicy: 'Background',
      });
    } catch (error) {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    }
  }

  /** Creates `obj`; 409 (AlreadyExists) surfaces as a KubeApiError. */
  async create<T extends KubeObjectLike>(obj: T): Promise<T> {
    this.count('create', obj.kind);
    const path = resourcePath(obj);
    return (await this.send('POST', path.slice(0, path.lastIndexOf('/')), obj)) as T;
  }

  /** Replaces `obj`; its metadata.resourceVersion makes it a compare-and-swap (409 when stale). */
  async replace<T extends KubeObjectLike>(obj: T): Promise<T> {
    this.count('replace', obj.kind);
    return (await this.send('PUT', resourcePath(obj), obj)) as T;
  }

  async read<T>(ref: ObjectRef): Promise<T | undefined> {
    try {
      return (await this.send('GET', resourcePath(ref))) as T;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /**
   * The metadata of `ref` only (a PartialObjectMetadata: a Secret's data never reaches the
   * operator this way), or undefined when it does not exist.
   */
  async readMetadata(
    ref: ObjectRef,
  ): Promise<{ metadata?: { labels?: Record<string, string> } } | undefined> {
    try {
      return (await this.send('GET', resourcePath(ref), undefined, PARTIAL_METADATA)) as {
        metadata?: { labels?: Record<string, string> };
      };
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return undefined;
      throw error;
    }
  }

  /**
   * Whether the API server serves `plural` in `apiVersion` (e.g. monitoring.coreos.com/v1
   * servicemonitors): API discovery, which every authenticated client may read (the
   * system:discovery role), so no cluster-wide grant on CustomResourceDefinitions is needed.
   */
  async serves(apiVersion: string, plural: string): Promise<boolean> {
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    try {
      const list = (await this.send('GET', base)) as { resources?: { name?: string }[] } | undefined;
      return list?.resources?.some((r) => r.name === plural) ?? false;
    } catch (error) {
      if (error instanceof KubeApiError && error.status === 404) return false;
      throw error;
    }
  }

  /** Objects of a kind in a namespace matching a label selector. */
  async list<T>(apiVersion: string, kind: string, namespace: string, labelSelector: string): Promise<T[]> {
    const path = resourcePath({ apiVersion, kind, metadata: { name: '', namespace } }).replace(/\/$/, '');
    const list = (await this.send('GET', `${path}?labelSelector=${encodeURIComponent(labelSelector)}`)) as {
      items?: T[];
    };
    return list.items ?? [];
  }

  private count(verb: WriteVerb, kind: string): void {
    this.writeCount += 1;
    this.onWrite?.(verb, kind);
  }

  private async send(
    method: string,
    path: string,
    body?: unknown,
    accept = 'application/json',
  ): Promise<unknown> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(path, cluster.server);
    const options: RequestOptions = {
      method,
      headers: {
        accept,
        ...(body === undefined
          ? {}
          : { 'content-type': method === 'PATCH' ? 'application/apply-patch+yaml' : 'application/json' }),
      },
    };
    await this.kubeConfig.applyToHTTPSOptions(options);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const requestFn = url.protocol === 'http:' ? httpRequest : httpsRequest;
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = requestFn(url, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      });
      req.on('error', reject);
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${url.pathname}: timed out`)));
      req.end(payload);
    });
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined; // e.g. "404 page not found" for an API group the server does not serve
    }
    if (status >= 400) {
      const s = (parsed ?? {}) as { reason?: string; message?: string };
      const message = s.message ?? text.trim();
      throw new KubeApiError(
        status,
        s.reason ?? 'Unknown',
        `${method} ${url.pathname}: ${status} ${message}`,
        message,
      );
    }
    if (parsed === undefined && text !== '')
      throw new Error(`${method} ${url.pathname}: the response is not JSON`);
    return parsed;
  }
}
