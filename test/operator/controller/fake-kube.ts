/**
 * An in-memory API server for reconcile tests: objects by apiVersion/kind/namespace/name, list by
 * label selector, server-side apply as "store what was sent" (keeping the object's status; its
 * metadata.resourceVersion moves only when the object changed, as the real server's does), and
 * hooks to refuse a write (an apply or a delete) as the real server would (422 on an immutable field, 403 over quota) or
 * to leave an API group unserved (404 on list, as without a CRD; discovery serves a resource once
 * its CustomResourceDefinition is stored). Records every write.
 */
import { KubeApiError, type KubeClient, type ObjectRef } from '../../../operator/src/k8s/client.js';
import { stableJson } from '../../../operator/src/resources/index.js';

/** An object without what the server sets (its resourceVersion), to tell whether an apply changed it. */
function content(obj: StoredObject): string {
  const { resourceVersion: _, ...metadata } = obj.metadata;
  return stableJson({ ...obj, metadata });
}

export interface StoredObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { uid: string }[];
    [key: string]: unknown;
  };
  status?: unknown;
  [key: string]: unknown;
}

export type Write = `${'apply' | 'delete' | 'status' | 'event'} ${string}`;

export class FakeKube {
  readonly objects = new Map<string, StoredObject>();
  readonly writes: Write[] = [];
  /** The Events created, whole (writes names only their reasons). */
  readonly events: StoredObject[] = [];
  /** The objects read whole (`<kind> <name>`), in order. */
  readonly reads: string[] = [];
  /** The objects whose metadata alone was read (`<kind> <name>`), in order. */
  readonly metadataReads: string[] = [];
  /** Kinds whose API group is not served: list and apply answer 404. */
  readonly unserved = new Set<string>();
  /** Returns the error the server answers an apply of `obj` with, or undefined to accept it. */
  refuse: (obj: StoredObject) => KubeApiError | undefined = () => undefined;
  /** Returns the error the server answers a delete of `ref` with, or undefined to accept it. */
  refuseDelete: (ref: ObjectRef) => KubeApiError | undefined = () => undefined;
  private version = 0;

  static key(ref: ObjectRef): string {
    return `${ref.apiVersion}/${ref.kind}/${ref.metadata.namespace ?? ''}/${ref.metadata.name}`;
  }

  put(obj: StoredObject): void {
    this.objects.set(FakeKube.key(obj), obj);
  }

  get(apiVersion: string, kind: string, namespace: string, name: string): StoredObject | undefined {
    return this.objects.get(FakeKube.key({ apiVersion, kind, metadata: { name, namespace } }));
  }

  /** The names of stored objects of a kind, sorted. */
  names(kind: string): string[] {
    return [...this.objects.values()]
      .filter((o) => o.kind === kind)
      .map((o) => o.metadata.name)
      .sort();
  }

  /** Forget the writes recorded so far. */
  clearWrites(): void {
    this.writes.length = 0;
  }

  /** The client the reconciler talks to. */
  get client(): KubeClient {
    const client = {
      read: (ref: ObjectRef): Promise<unknown> => {
        this.reads.push(`${ref.kind} ${ref.metadata.name}`);
        if (this.unserved.has(ref.kind)) return Promise.resolve(undefined);
        return Promise.resolve(structuredClone(this.objects.get(FakeKube.key(ref))));
      },
      readMetadata: (ref: ObjectRef): Promise<unknown> => {
        const obj = this.objects.get(FakeKube.key(ref));
        this.metadataReads.push(`${ref.kind} ${ref.metadata.name}`);
        return Promise.resolve(obj === undefined ? undefined : { metadata: structuredClone(obj.metadata) });
      },
      // API discovery: a group/version serves a resource once its CRD is stored.
      serves: (apiVersion: string, plural: string): Promise<boolean> => {
        const group = apiVersion.split('/')[0] ?? '';
        return Promise.resolve(
          this.objects.has(
            FakeKube.key({
              apiVersion: 'apiextensions.k8s.io/v1',
              kind: 'CustomResourceDefinition',
              metadata: { name: `${plural}.${group}` },
            }),
          ),
        );
      },
      list: (apiVersion: string, kind: string, namespace: string, selector: string): Promise<unknown[]> => {
        if (this.unserved.has(kind))
          return Promise.reject(
            new KubeApiError(404, 'NotFound', `GET ${kind}: 404 404 page not found`, '404 page not found'),
          );
        const wanted = selector
          .split(',')
          .filter((s) => s !== '')
          .map((s) => s.split('=') as [string, string]);
        return Promise.resolve(
          [...this.objects.values()]
            .filter(
              (o) => o.apiVersion === apiVersion && o.kind === kind && o.metadata.namespace === namespace,
            )
            .filter((o) => wanted.every(([k, v]) => o.metadata.labels?.[k] === v))
            .map((o) => structuredClone(o)),
        );
      },
      apply: (obj: StoredObject): Promise<unknown> => {
        if (this.unserved.has(obj.kind))
          return Promise.reject(
            new KubeApiError(404, 'NotFound', `PATCH ${obj.kind}: 404`, '404 page not found'),
          );
        const refused = this.refuse(obj);
        if (refused !== undefined) return Promise.reject(refused);
        this.writes.push(`apply ${obj.kind} ${obj.metadata.name}`);
        const existing = this.objects.get(FakeKube.key(obj));
        const stored = structuredClone(obj);
        if (existing?.status !== undefined) stored.status = existing.status;
        // The server names an object at its creation: a deleted and re-created one has a new uid.
        stored.metadata['uid'] = existing?.metadata['uid'] ?? `uid-created-${++this.version}`;
        const unchanged = existing !== undefined && content(existing) === content(stored);
        const version = unchanged ? existing.metadata['resourceVersion'] : String(++this.version);
        if (version !== undefined) stored.metadata['resourceVersion'] = version;
        this.put(stored);
        return Promise.resolve(structuredClone(stored));
      },
      applyStatus: (ref: ObjectRef, status: unknown): Promise<void> => {
        this.writes.push(`status ${ref.kind} ${ref.metadata.name}`);
        const existing = this.objects.get(FakeKube.key(ref));
        if (existing !== undefined) existing.status = structuredClone(status);
        return Promise.resolve();
      },
      delete: (ref: ObjectRef): Promise<void> => {
        const refused = this.refuseDelete(ref);
        if (refused !== undefined) return Promise.reject(refused);
        this.writes.push(`delete ${ref.kind} ${ref.metadata.name}`);
        this.objects.delete(FakeKube.key(ref));
        return Promise.resolve();
      },
      create: (obj: StoredObject): Promise<unknown> => {
        if (obj.kind === 'Event') {
          this.writes.push(`event ${String(obj['reason'])}`);
          this.events.push(structuredClone(obj));
        } else this.put(structuredClone(obj));
        return Promise.resolve(obj);
      },
    };
    return client as unknown as KubeClient;
  }
}
