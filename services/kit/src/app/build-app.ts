import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import { authMiddleware, type TokenStore } from '../auth.js';
import { NotFoundError } from '../errors.js';
import { ConcurrencyGate } from '../gate.js';
import { bodyIdleHandler } from '../http/body-idle.js';
import { BodyMemory } from '../http/body-memory.js';
import { GpuStatusReader, GpuSummarySchema, registerGpuMetrics, summarizeGpu } from '../gpu/index.js';
import { corsMiddleware } from '../http/cors.js';
import { contextMiddleware, requestContext, type RequestContext } from '../http/context.js';
import { buildOpenApiDocument, docsRouter } from '../http/openapi.js';
import { createErrorRenderer, type ErrorShape } from '../http/render-error.js';
import { admissionHandler, parsesBody, routeHandler, type AnyRoute } from '../http/route.js';
import { createLogger, loggableUrl, type Logger } from '../logger.js';
import { createMetrics, httpMetricsMiddleware, type KitMetrics } from '../metrics.js';
import { ConfigError, type KitConfig } from '../config.js';
import { Readiness } from '../readiness.js';
import { Resource, type ResourceSpec } from '../lifecycle/resource.js';
import { ModelHost, type Disposable, type ModelHostOptions } from '../model-host.js';
import type { Server } from 'node:http';

/**
 * `buildApp()` makes a service's Express 5 app with everything the kit promises: request ids,
 * redacted pino-http logs, body limits, zod validation, the error catalogue's bodies, bearer auth,
 * the concurrency gate and deadlines, `/metrics`, `/livez` and `/readyz`, `/openapi.json` and
 * `/docs`. It does not listen: tests use the app directly and `serve()` runs it.
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

/** Kubernetes probes and Prometheus scrapes: logged at debug. */
const PROBE_PATHS: ReadonlySet<string> = new Set(['/livez', '/readyz', '/health', '/metrics']);

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

function buildExpressApp(
  kit: Kit,
  options: KitOptions,
  serviceRoutes: readonly AnyRoute[],
): { app: Express; openapi: Record<string, unknown>; live: Set<RequestContext> } {
  const { config, logger, readiness, metrics, gate, gpu, bodyMemory } = kit;
  const { service } = options;
  const errorShape = options.errorShape ?? 'detail';
  const errors = createErrorRenderer(errorShape);
  const live = new Set<RequestContext>();
  const routes = [
    ...kitRoutes(readiness, metrics),
    ...(options.gpuStatusPath === undefined ? [] : [gpuStatusRoute(options.gpuStatusPath, gpu)]),
    ...serviceRoutes,
  ];
  const openapi = buildOpenApiDocument(routes, {
    title: options.title,
    version: options.version,
    errorShape,
    authenticated: options.auth !== undefined,
    ...(options.description === undefined ? {} : { description: options.description }),
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', options.trustProxy ?? false);
  app.use(contextMiddleware({ logger, timeoutMs: config.REQUEST_TIMEOUT_MS, live }));
  if (config.CORS_ORIGINS.length > 0) app.use(corsMiddleware(config.CORS_ORIGINS));
  app.use(httpMetricsMiddleware(metrics));
  app.use(
    pinoHttp({
      logger,
      genReqId: (req) => requestContext(req as express.Request).requestId,
      quietReqLogger: true,
      // The completion line adds `req` itself (below): pino-http would serialize it into a child
      // logger as the request arrives, before the route template is known.
      quietResLogger: true,
      customAttributeKeys: { reqId: 'reqId' },
      // Probes and scrapes arrive every few seconds: debug, so they do not bury the requests
      // (readiness changes are logged where they happen). A 503 while not ready is not an error.
      customLogLevel: (req, res, err) => {
        if (PROBE_PATHS.has(requestContext(req as express.Request).route ?? '')) return 'debug';
        if (err !== undefined || res.statusCode >= 500) return res.statusCode === 503 ? 'warn' : 'error';
        return 'info';
      },
      serializers: {
        req: (req: { method: string; raw: express.Request }) => ({
          method: req.method,
          url: accessLogUrl(req.raw),
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      // The route template is known once the request has been routed: added to the completion line
      // (customProps would bind 'unmatched' at the start and repeat the key).
      customSuccessObject: (req, _res, value: Record<string, unknown>) => ({
        req,
        ...value,
        route: requestContext(req as express.Request).route ?? 'unmatched',
      }),
      customErrorObject: (req, _res, _err, value: Record<string, unknown>) => ({
        req,
        ...value,
        route: requestContext(req as express.Request).route ?? 'unmatched',
      }),
    }),
  );

  options.auth?.tokens.reportReloadFailuresTo((message) => logger.warn(message));
  if (config.AUTH_DISABLED)
    logger.warn(
      'AUTH_DISABLED=true: bearer auth is off, so anyone who can reach this port can call every route; ' +
        'unset it to require tokens',
    );
  const auth = options.auth
    ? authMiddleware({
        tokens: options.auth.tokens,
        realm: service,
        scopes: options.auth.scopes ?? [],
        ...(options.auth.scopeFailureStatus === undefined
          ? {}
          : { scopeFailureStatus: options.auth.scopeFailureStatus }),
      })
    : undefined;
  const bodyParsers = [
    express.json({ limit: config.BODY_LIMIT }),
    express.urlencoded({ extended: false, limit: config.BODY_LIMIT }),
  ];
  const runtime = { gate, readiness, sendError: errors.sendError };
  const countBody = bodyMemory.handler();
  const bodyIdle = bodyIdleHandler(config.BODY_IDLE_TIMEOUT_MS, config.BODY_MIN_RATE);
  for (const route of routes) {
    const parsers = parsesBody(route) ? (route.bodyParser ?? bodyParsers) : [];
    const chain = [
      (req: express.Request, _res: express.Response, next: express.NextFunction) => {
        requestContext(req).route = route.path;
        next();
      },
      ...(auth && route.auth !== false ? [auth] : []),
      // The deadline before the body parsers; validation, readiness and the slot after (admissionHandler).
      admissionHandler(route, runtime),
      ...(parsers.length > 0 ? [bodyIdle] : []),
      ...(parsers.length > 0 && route.bodyInMemory !== false ? [countBody] : []),
      ...parsers,
      routeHandler(route, runtime),
    ];
    app[route.method](route.path, ...chain);
  }
  app.get('/openapi.json', (req, res) => {
    requestContext(req).route = '/openapi.json';
    res.json(openapi);
  });
  app.use('/docs', (req, _res, next) => {
    requestContext(req).route = '/docs';
    next();
  });
  app.use(docsRouter(options.title));
  app.use((req, _res, next) => {
    next(new NotFoundError(`No route for ${req.method} ${req.path}`));
  });
  app.use(errors.middleware);

  return { app, openapi, live };
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

/**
 * The URL the access log records: the route template (`/delete_person/:name`), never the raw path,
 * whose parameters can be a person's name or a patient id (docs/architecture.md §8); then the names of the
 * query parameters without their values. A request no route matched is logged as `unmatched`.
 */
function accessLogUrl(req: express.Request): string {
  const route = requestContext(req).route ?? 'unmatched';
  const url = loggableUrl(req.originalUrl);
  const q = url.indexOf('?');
  return q < 0 ? route : `${route}${url.slice(q)}`;
}

/** Probes and metrics every service serves, without a token and outside the gate. */
function kitRoutes(readiness: Readiness, metrics: KitMetrics): AnyRoute[] {
  return [
    {
      method: 'get',
      path: '/livez',
      summary: 'Liveness: the process serves HTTP',
      tags: ['probes'],
      auth: false,
      handler: () => ({ live: true }),
    },
    {
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: 200 when ready, 503 with the reason otherwise',
      tags: ['probes'],
      auth: false,
      handler: ({ res }) => {
        if (readiness.ready) return { ready: true };
        res.status(503).setHeader('retry-after', '5');
        res.json({ ready: false, reason: readiness.reason });
        return undefined;
      },
    },
    {
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics',
      tags: ['probes'],
      auth: false,
      handler: async ({ res }) => {
        const text = await metrics.registry.metrics();
        res.setHeader('content-type', metrics.registry.contentType);
        res.send(text);
        return undefined;
      },
    },
  ];
}

function gpuStatusRoute(path: string, gpu: GpuStatusReader): AnyRoute {
  return {
    method: 'get',
    path,
    summary: 'GPU status: name, memory, utilization and temperature of each visible GPU',
    description: 'Without an NVIDIA GPU: `available: false`, `device: "cpu"`, and null readings.',
    tags: ['gpu'],
    response: GpuSummarySchema,
    handler: async () => summarizeGpu(await gpu.read()),
  };
}
