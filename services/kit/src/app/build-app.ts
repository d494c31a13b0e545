import type { Express } from 'express';
import type { Server } from 'node:http';
import type { TokenStore } from '../auth.js';
import { ConfigError, type KitConfig } from '../config.js';
import { ConcurrencyGate } from '../gate.js';
import { GpuStatusReader, registerGpuMetrics } from '../gpu/index.js';
import { BodyMemory } from '../http/body-memory.js';
import type { RequestContext } from '../http/context.js';
import type { ErrorShape } from '../http/render-error.js';
import type { AnyRoute } from '../http/route.js';
import { Resource, type ResourceSpec } from '../lifecycle/resource.js';
import { createLogger, type Logger } from '../logger.js';
import { createMetrics, type KitMetrics } from '../metrics.js';
import { ModelHost, type Disposable, type ModelHostOptions } from '../model-host.js';
import { Readiness } from '../readiness.js';
import { buildExpressApp } from './express-app.js';

/**
 * A service's lifecycle: `createKit()` makes its parts, the service declares what it opens
 * (resources, models, workers, periodic tasks, owned values), and `mount(routes)` makes the app
 * (express-app.ts) with everything the kit promises. It does not listen: tests use the app
 * directly and `serve()` runs it, opening and closing the resources.
 */

export interface AuthOptions {
  readonly tokens: TokenStore;
  /** A token needs one of these scopes; empty: any known token. */
  readonly scopes?: readonly string[];
  /** 401 instead of 403 for a known token without the scope (see AuthPolicy). */
  readonly scopeFailureStatus?: 401 | 403;
}

export interface KitOptions {
  /** Short service name: logs, metrics `service` label, WWW-Authenticate realm. */
  readonly service: string;
  readonly title: string;
  readonly version: string;
  readonly description?: string;
  readonly config: KitConfig;
  /** The service's own readiness reason until `start()` (default `starting`). */
  readonly startingReason?: string;
  /** Omit (or undefined, as `serviceAuth()` gives with AUTH_DISABLED) for a service without credentials. */
  readonly auth?: AuthOptions | undefined;
  /** `envelope` for the face service's `{success, message}` bodies. */
  readonly errorShape?: ErrorShape;
  readonly logger?: Logger | undefined;
  readonly gpu?: GpuStatusReader | undefined;
  /**
   * Serve the GPU summary (`summarizeGpu`: available, device, memory, utilization, temperature,
   * and every GPU) at this path, e.g. `/gpu_status` for the face service.
   */
  readonly gpuStatusPath?: string;
  /** Process metrics; default on. */
  readonly processMetrics?: boolean | undefined;
  /**
   * Express's `trust proxy`, for a service behind a TLS-terminating proxy: `req.secure` and
   * `req.ip` from its X-Forwarded-* headers (true, a hop count, or addresses and subnets);
   * default false.
   */
  readonly trustProxy?: boolean | number | string | readonly string[];
}

export interface AppOptions extends KitOptions {
  readonly routes: readonly AnyRoute[] | ((parts: KitParts) => readonly AnyRoute[]);
  /** The caller's readiness, which it sets itself (`start()` leaves it as it is). */
  readonly readiness?: Readiness;
}

/** What routes may use of the app they belong to. */
export interface KitParts {
  readonly gate: ConcurrencyGate;
  readonly metrics: KitMetrics;
  readonly readiness: Readiness;
  readonly gpu: GpuStatusReader;
  readonly logger: Logger;
}

export interface MountOptions {
  /** Given the listening server (WebSocket upgrades). */
  readonly attach?: (server: Server) => void;
  /** Runs as shutdown begins, before requests drain (close long-lived sockets). */
  readonly beforeDrain?: () => Promise<void> | void;
}

/** A service, assembled: its app, its parts, and the resources it opens and closes. */
export interface KitApp {
  readonly app: Express;
  readonly logger: Logger;
  readonly metrics: KitMetrics;
  readonly gate: ConcurrencyGate;
  /** Request bodies held in memory, against BODY_MEMORY_LIMIT. */
  readonly bodyMemory: BodyMemory;
  readonly readiness: Readiness;
  readonly gpu: GpuStatusReader;
  readonly openapi: Record<string, unknown>;
  readonly config: KitConfig;
  /** Requests not yet answered; shutdown aborts those that outlive the grace period. */
  readonly live: ReadonlySet<RequestContext>;
  /** Opens every resource in the background (after listening); idempotent. */
  start(): void;
  /** Resolves when every resource is open or has given up. */
  settled(): Promise<void>;
  /** `start()`, then `settled()`: for a caller that uses the app without `serve()` (tests, tools). */
  open(): Promise<void>;
  /** Closes the resources in reverse order; idempotent. */
  close(): Promise<void>;
  readonly attach?: (server: Server) => void;
  readonly beforeDrain?: () => Promise<void> | void;
}

/**
 * A service's parts, made first: logger, config, readiness, GPU reader, gate, metrics. Then the
 * service declares what it owns (`resource`, `model`, `background`, `every`, `own`) and builds its
 * domain from these, and `mount(routes)` makes the app last (docs/architecture.md, "How a service
 * is assembled").
 */
export class Kit {
  readonly logger: Logger;
  readonly config: KitConfig;
  readonly readiness: Readiness;
  readonly gpu: GpuStatusReader;
  readonly gate: ConcurrencyGate;
  readonly bodyMemory: BodyMemory;
  readonly metrics: KitMetrics;
  private readonly resources: { start(): void; settled(): Promise<void>; close(): Promise<void> }[] = [];
  private mounted = false;

  private readonly readyOnStart: boolean;

  constructor(
    private readonly options: KitOptions,
    given?: Readiness,
  ) {
    const { config, service } = options;
    this.config = config;
    this.logger = options.logger ?? createLogger({ service, level: config.LOG_LEVEL });
    this.readiness = given ?? new Readiness(options.startingReason ?? 'starting');
    this.readyOnStart = given === undefined;
    this.gate = new ConcurrencyGate({
      limit: config.MAX_CONCURRENCY,
      queueSize: config.QUEUE_SIZE,
      maxWaitMs: config.QUEUE_TIMEOUT_MS,
    });
    this.gpu =
      options.gpu ??
      new GpuStatusReader({
        binary: config.NVIDIA_SMI_PATH,
        ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
      });
    this.bodyMemory = bodyMemoryOf(config);
    const readiness = this.readiness;
    this.metrics = createMetrics({
      service,
      version: options.version,
      gate: this.gate,
      bodyMemory: this.bodyMemory,
      isReady: () => readiness.ready,
      ...(options.processMetrics === undefined ? {} : { processMetrics: options.processMetrics }),
    });
    registerGpuMetrics(this.metrics.registry, this.gpu);
  }

  /**
   * Something the service opens after listening (a store, an engine, a child process): the
   * service is not ready until it is open (unless it is `optional`); closed in reverse order of
   * declaration on shutdown.
   */
  resource<T>(spec: ResourceSpec<T>): Resource<T> {
    this.declaring(spec.name);
    const reason = spec.startingReason ?? `starting: ${spec.name} opens after the server listens`;
    // An optional resource's condition is its own: the service's readiness does not wait for it.
    const condition = spec.optional === true ? new Readiness(reason) : this.readiness.condition(reason);
    const resource = new Resource(spec, condition, this.logger);
    this.resources.push(resource);
    return resource;
  }

  /** The service's model files, waited for and loaded after listening (a resource). */
  model<E extends Disposable>(spec: Omit<ModelHostOptions<E>, 'readiness' | 'logger'>): ModelHost<E> {
    this.declaring('the model');
    const host = new ModelHost<E>({
      ...spec,
      logger: this.logger,
      readiness: this.readiness.condition('starting: the model loads after the server listens'),
    });
    this.resources.push(host);
    return host;
  }

  /**
   * Something with `start()` and `stop()` (a monitor, a poller): started after the server listens,
   * stopped on shutdown, in order with the resources; returns it.
   */
  background<T extends { start(): void; stop(): Promise<void> | void }>(name: string, worker: T): T {
    this.resource({
      name,
      open: () => {
        worker.start();
        return worker;
      },
      close: (started) => started.stop(),
    });
    return worker;
  }

  /**
   * Runs `task` every `intervalMs` from listening to shutdown (a sweeper); a task that throws is
   * logged and runs again at the next interval.
   */
  every(name: string, intervalMs: number, task: () => void): Resource<NodeJS.Timeout> {
    const run = (): void => {
      try {
        task();
      } catch (error) {
        this.logger.error({ err: error, resource: name }, `${name} failed`);
      }
    };
    return this.resource({
      name,
      open: () => setInterval(run, intervalMs).unref(),
      close: (timer) => clearInterval(timer),
    });
  }

  /** Something already open (given by the caller, or opened in main): closed on shutdown. */
  own<T>(value: T, close: (value: T) => Promise<void> | void): T {
    this.declaring('an owned value');
    let closing: Promise<void> | undefined;
    this.resources.push({
      start: () => undefined,
      settled: () => Promise.resolve(),
      close: () => (closing ??= Promise.resolve(close(value))),
    });
    return value;
  }

  /** A resource declared after mount would never open nor close, and the service never be ready. */
  private declaring(what: string): void {
    if (this.mounted) throw new Error(`${what}: a kit's resources are declared before mount`);
  }

  /** Makes the app from the routes; the last step of a service's assembly. */
  mount(routes: readonly AnyRoute[], mountOptions: MountOptions = {}): KitApp {
    if (this.mounted) throw new Error('a kit mounts its routes once');
    this.mounted = true;
    const { app, openapi, live } = buildExpressApp(this, this.options, routes);
    const resources = [...this.resources];
    const readiness = this.readiness;
    let started = false;
    let closing: Promise<void> | undefined;
    const start = (): void => {
      if (started) return;
      started = true;
      for (const resource of resources) resource.start();
      if (this.readyOnStart) readiness.setReady();
    };
    const settled = async (): Promise<void> => {
      await Promise.all(resources.map((r) => r.settled()));
    };
    return {
      app,
      openapi,
      live,
      logger: this.logger,
      config: this.config,
      readiness,
      gpu: this.gpu,
      gate: this.gate,
      bodyMemory: this.bodyMemory,
      metrics: this.metrics,
      start,
      settled,
      open: async () => {
        start();
        await settled();
      },
      close: () =>
        (closing ??= (async () => {
          readiness.setShuttingDown();
          for (const resource of [...resources].reverse()) {
            try {
              await resource.close();
            } catch (error) {
              this.logger.error({ err: error }, 'a resource failed to close');
            }
          }
        })()),
      ...(mountOptions.attach === undefined ? {} : { attach: mountOptions.attach }),
      ...(mountOptions.beforeDrain === undefined ? {} : { beforeDrain: mountOptions.beforeDrain }),
    };
  }
}

export function createKit(options: KitOptions): Kit {
  return new Kit(options);
}

/** A service without resources of its own: its parts and its routes in one call. */
export function buildApp(options: AppOptions): KitApp {
  const { routes, readiness, ...kitOptions } = options;
  const kit = new Kit(kitOptions, readiness);
  return kit.mount(typeof routes === 'function' ? routes(kit) : routes);
}

/** The budget of request bodies in memory, and one request's share of it (see http/body-memory.ts). */
function bodyMemoryOf(config: KitConfig): BodyMemory {
  const share = config.BODY_MEMORY_SHARE;
  if (share !== undefined && share > config.BODY_MEMORY_LIMIT) {
    throw new ConfigError([
      `BODY_MEMORY_SHARE: must be <= BODY_MEMORY_LIMIT (${String(config.BODY_MEMORY_LIMIT)} bytes), ` +
        `the budget it is a share of (got ${String(share)} bytes)`,
    ]);
  }
  return new BodyMemory(config.BODY_MEMORY_LIMIT, share);
}
