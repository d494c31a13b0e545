export {
  HttpClient,
  type CallSpec,
  type HttpClientOptions,
  type OutboundMethod,
  type OutboundResult,
  type RetryPolicy,
} from './client.js';
export { OutboundResponse } from './response.js';
export { CallDeadline } from './deadline.js';
export {
  DEFAULT_FAILURES,
  fieldIssues,
  retryAfterMs,
  upstreamDetail,
  upstreamError,
  type FailureMapping,
  type StatusFailure,
  type TransportFailure,
} from './failures.js';
export {
  OUTBOUND_METRIC_NAMES,
  outboundMetrics,
  type OutboundMetrics,
  type OutboundOutcome,
} from './metrics.js';
export { DEFAULT_MAX_EVENT_CHARS, parseEventStream, type SseEvent, type SseParseOptions } from './sse.js';
