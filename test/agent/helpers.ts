import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildAgentApp, type AgentService } from '../../services/agent/src/app.js';
import { loadAgentConfig, type AgentConfig } from '../../services/agent/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { TOKEN as LLM_TOKEN } from '../llm/helpers.js';

export { LLM_TOKEN };

/** The agent's bearer token in tests (scope ai_agent). */
export const AGENT_TOKEN = 'test-agent-token-0123456789';
export const agentAuth = { authorization: `Bearer ${AGENT_TOKEN}` };

export interface AgentTestServer {
  readonly service: AgentService;
  readonly config: AgentConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * The agent on an ephemeral loopback port, with WebSockets attached. `env` gives LLM_URL (or the
 * per-upstream URLs) and any sub-service URL; greedy sampling so replies compare with the LLM's own.
 * `waitReady` (default) waits for the first round of upstream probes.
 */
export async function startAgent(
  env: Record<string, string>,
  options: { waitReady?: boolean; now?: () => number } = {},
): Promise<AgentTestServer> {
  const config = loadAgentConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    AI_AGENT_API_TOKEN: AGENT_TOKEN,
    API_TOKEN: LLM_TOKEN,
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    AGENT_TEMPERATURE: '0',
    AGENT_MAX_TOKENS: '16',
    AGENT_LLM_PROBE_MS: '200',
    AGENT_LLM_BACKOFF_MS: '10',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildAgentApp({
    config,
    logger: createLogger({ service: 'agent', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  // Listens, serves WebSockets, starts probing the upstreams; shutdown closes the sockets first.
  const server = await serve(service.kit, { signals: [], exit: false });
  if (options.waitReady !== false) await service.upstreams.check();
  return {
    service,
    config,
    server,
    url: server.url,
    logs,
    close: () => server.shutdown('test finished'),
  };
}

export async function agentPost(
  url: string,
  body: unknown,
  init: { headers?: Record<string, string>; signal?: AbortSignal; token?: string | null } = {},
): Promise<Response> {
  const token = init.token === undefined ? AGENT_TOKEN : init.token;
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...init.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
}

export async function agentGet(url: string, token: string | null = AGENT_TOKEN): Promise<Response> {
  return fetch(url, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
}

/** The `data:` payloads of an SSE body, in order (multi-line data joined with newlines). */
export function sseEvents(text: string): { event: string | null; data: string }[] {
  return text
    .split(/\n\n/)
    .map((block) => block.split('\n'))
    .filter((lines) => lines.some((l) => l.startsWith('data:')))
    .map((lines) => ({
      event:
        lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim() ?? null,
      data: lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
        .join('\n'),
    }));
}

/** A loopback port nothing listens on. */
export { closedPort } from '../patient-sim/helpers.js';

export { metricValue } from '../kit/helpers.js';
