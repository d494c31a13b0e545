import express, { type Express } from 'express';
import { pinoHttp } from 'pino-http';
import { authMiddleware } from '../auth.js';
import { NotFoundError } from '../errors.js';
import { GpuSummarySchema, summarizeGpu, type GpuStatusReader } from '../gpu/index.js';
import { bodyIdleHandler } from '../http/body-idle.js';
import { corsMiddleware } from '../http/cors.js';
import { contextMiddleware, requestContext, type RequestContext } from '../http/context.js';
import { buildOpenApiDocument, docsRouter } from '../http/openapi.js';
import { createErrorRenderer } from '../http/render-error.js';
import { admissionHandler, parsesBody, routeHandler, type AnyRoute } from '../http/route.js';
import { loggableUrl } from '../logger.js';
import { httpMetricsMiddleware, type KitMetrics } from '../metrics.js';
import type { Readiness } from '../readiness.js';
import type { Kit, KitOptions } from './build-app.js';

/**
 * The Express app of a mounted kit: request ids, redacted access logs, body limits, auth, the gate
 * and deadlines per route, the kit's probes and `/metrics`, `/openapi.json` and `/docs`, and the
 * error renderer last (docs/architecture.md, "How a service is assembled").
 */

/** Kubernetes probes and Prometheus scrapes: logged at debug. */
const PROBE_PATHS: ReadonlySet<string> = new Set(['/livez', '/readyz', '/health', '/metrics']);

export function buildExpressApp(
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
