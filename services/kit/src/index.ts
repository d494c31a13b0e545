export {
  buildApp,
  createKit,
  Kit,
  type AppOptions,
  type AuthOptions,
  type KitApp,
  type KitOptions,
  type KitParts,
  type MountOptions,
} from './app/build-app.js';
export {
  Resource,
  type OpenContext,
  type ResourceSpec,
  type ResourceState,
  type RetryPolicy,
} from './lifecycle/resource.js';
export { serviceAuth, type ServiceAuthConfig, type ServiceAuthOptions } from './app/service-auth.js';
export { serve, type RunningServer, type ServeOptions } from './app/serve.js';
export { runMain } from './main-helpers.js';
export {
  childLimits,
  ConfigError,
  env,
  kitConfigSchema,
  loadConfig,
  LOG_LEVELS,
  type KitConfig,
  type KitDefaults,
} from './config.js';
export * from './errors.js';
export {
  TokenStore,
  parseTokensFile,
  authMiddleware,
  checkBearer,
  pathMatcher,
  type BearerCheck,
  type TokenGrant,
  type TokenStoreOptions,
} from './auth.js';
export { ConcurrencyGate, type GateOptions, type GateRejection } from './gate.js';
export { BodyMemory } from './http/body-memory.js';
export { Readiness, type ReadinessSignal } from './readiness.js';
export { waitForModelFile, type WaitForModelFileOptions } from './model-file.js';
export { ModelHost, type Disposable, type ModelHostOptions, type ModelState } from './model-host.js';
export { createLogger, loggableUrl, REDACTED_KEYS, type Logger } from './logger.js';
export { withoutTrailingSlashes } from './urls.js';
export { createMetrics, HTTP_DURATION_BUCKETS, type KitMetrics } from './metrics.js';
export { requestContext, type RequestContext } from './http/context.js';
export {
  defineRoute,
  type AnyRoute,
  type HandlerContext,
  type HttpMethod,
  type RouteDefinition,
} from './http/route.js';
export { healthRoute, type HealthRouteOptions } from './http/health.js';
export { jsonBody, type JsonBodyOptions } from './http/json-body.js';
export { buildOpenApiDocument } from './http/openapi.js';
export { renderErrorBody, toHttpError, type ErrorShape } from './http/render-error.js';
export { openSse, type SseOptions, type SseStream } from './http/sse.js';
export { blankAsAbsent, formOptional } from './http/form-fields.js';
export {
  multipart,
  uploadedFiles,
  type MultipartField,
  type MultipartOptions,
  type UploadedFile,
} from './http/multipart.js';
export {
  childLimitFailure,
  DEFAULT_CHILD_LIMITS,
  limitedCommand,
  MemoryWatch,
  PRLIMIT,
  type ChildEnding,
  type ChildLimits,
} from './child-limits.js';
export {
  DEFAULT_MAX_OUTPUT_BYTES,
  lastLine,
  ProcessError,
  ProcessRunner,
  runProcess,
  STDERR_TAIL_CHARS,
  type ProcessFailureKind,
  type ProcessRunnerOptions,
  type RunOptions,
  type RunResult,
} from './process.js';
export * from './http-client/index.js';
