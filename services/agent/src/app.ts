import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Readiness, buildApp, serviceAuth, createLogger, type KitApp, type Logger } from '@clinicalsuite/kit';
import { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { createShell, type Shell } from './adapters/shell/index.js';
import { createSubservices, type SubserviceClients } from './adapters/subservices/index.js';
import { UpstreamPool } from './adapters/upstream-pool.js';
import type { AgentConfig } from './config.js';
import { IntentDetector } from './domain/intent/index.js';
import { SessionStore } from './domain/sessions.js';
import { createAgentMetrics } from './metrics.js';
import { agentRoutes, chatSocket, type ChatSocket } from './routes/index.js';
import type { AgentRuntime } from './routes/runtime.js';
import { createUseCases, type AgentUseCases } from './use-cases/index.js';

export const SERVICE = 'agent';
export const VERSION = '0.1.0';
/** The token scope the agent requires (spec, Authentication). */
export const AGENT_SCOPE = 'ai_agent';

export interface AgentDeps {
  readonly config: AgentConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  /** Epoch ms (sessions' TTL, cooldowns, timestamps). */
  readonly now?: () => number;
  readonly processMetrics?: boolean;
}

export interface AgentService {
  readonly kit: KitApp;
  readonly runtime: AgentRuntime;
  readonly upstreams: UpstreamPool;
  readonly subservices: SubserviceClients;
  readonly shell: Shell;
  /** Starts probing the LLM upstreams and sweeping expired sessions; call after listening. */
  start(): void;
  /** Serves `WS /ws/chat` on the listening server. */
  attach(server: Server): void;
  close(): void;
}

/**
 * Builds the agent: its LLM router over the three upstreams, the sub-service clients, the intent
 * detector, sessions, the shell, and every route. Not listening, not probing until `start()`.
 */
export function buildAgentApp(deps: AgentDeps): AgentService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'agent', level: config.LOG_LEVEL });
  const now = deps.now ?? (() => Date.now());
  const readiness = new Readiness('starting: no LLM upstream has answered yet');
  const gpu =
    deps.gpu ??
    new GpuStatusReader({
      binary: config.NVIDIA_SMI_PATH,
      ...(config.CUDA_VISIBLE_DEVICES === undefined ? {} : { visibleDevices: config.CUDA_VISIBLE_DEVICES }),
    });
  // The spec: every endpoint but /, /health and /capabilities needs an `ai_agent` token, and a
  // token without that scope is as invalid as an unknown one (401).
  const auth = serviceAuth(config, {
    scope: AGENT_SCOPE,
    tokenEnv: 'AI_AGENT_API_TOKEN',
    token: config.AI_AGENT_API_TOKEN,
    alwaysOn: true,
    scopeFailureStatus: 401,
  });
  const startedAt = now();
  let parts:
    | {
        runtime: AgentRuntime;
        upstreams: UpstreamPool;
        subservices: SubserviceClients;
        shell: Shell;
        useCases: AgentUseCases;
      }
    | undefined;
  let sessions: SessionStore | undefined;
  const kit = buildApp({
    service: SERVICE,
    title: 'ClinicalSuite agent orchestrator',
    version: VERSION,
    description:
      'Detects the intent of a message and routes it to one of three LLMs (alpha4_service, beta3_service, ' +
      'beta_service) or to a sub-service (speech to text, OCR, text to speech, medical code search, face ' +
      'recognition, patient simulator); in-memory sessions, SSE and WebSocket streaming, pipelines, and a ' +
      'guarded shell. Every endpoint but /, /health and /capabilities needs a bearer token with the ' +
      '`ai_agent` scope.',
    config,
    logger,
    readiness,
    gpu,
    gpuStatusPath: '/gpu',
    auth,
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics: kitMetrics }) => {
      const metrics = createAgentMetrics(kitMetrics, {
        sessions: () => sessions?.size ?? 0,
        upstreamUp: () => pool.upMap(),
      });
      sessions = new SessionStore(
        config.AGENT_SESSION_TTL_S * 1000,
        config.AGENT_MAX_SESSIONS,
        config.AGENT_SESSION_MAX_MESSAGES,
        (reason) => metrics.sessionsEnded.inc({ reason }),
      );
      const pool: UpstreamPool = new UpstreamPool({
        upstreams: config.upstreams,
        timeoutMs: config.AGENT_LLM_TIMEOUT_MS,
        firstByteTimeoutMs: config.AGENT_LLM_FIRST_BYTE_TIMEOUT_MS,
        retries: config.AGENT_LLM_RETRIES,
        backoffMs: config.AGENT_LLM_BACKOFF_MS,
        cooldownMs: config.AGENT_LLM_COOLDOWN_MS,
        probeMs: config.AGENT_LLM_PROBE_MS,
        probeTimeoutMs: config.AGENT_STATUS_TIMEOUT_MS,
        metrics,
        logger,
        readiness,
        now,
      });
      const runtime: AgentRuntime = {
        config,
        version: VERSION,
        logger,
        readiness,
        gate,
        gpu,
        metrics,
        router: pool,
        upstreams: pool,
        sessions,
        intents: new IntentDetector({
          router: pool,
          useLlm: config.AGENT_INTENT_LLM,
          // Never the message: it is clinical data.
          onClassifierError: (error) =>
            logger.warn(
              { err: error instanceof Error ? error.message : String(error) },
              'intent classifier failed: rules decide',
            ),
        }),
        now,
        newSessionId: () => randomUUID(),
        startedAt,
      };
      const subservices = createSubservices(config, { metrics, logger });
      const shell = createShell(config, { router: pool, logger, metrics });
      const useCases = createUseCases({
        config,
        version: VERSION,
        router: pool,
        upstreams: pool,
        sessions,
        intents: runtime.intents,
        subservices,
        shell,
        metrics,
        gate,
        now,
        newSessionId: runtime.newSessionId,
        startedAt,
      });
      parts = { runtime, upstreams: pool, subservices, shell, useCases };
      const ctx = { config, version: VERSION, readiness, useCases };
      return agentRoutes(ctx);
    },
  });
  if (parts === undefined || sessions === undefined) throw new Error('buildApp did not build the routes');
  const { runtime, upstreams, subservices, shell, useCases } = parts;
  const store = sessions;
  let sweeper: NodeJS.Timeout | undefined;
  let socket: ChatSocket | undefined;
  return {
    kit,
    runtime,
    upstreams,
    subservices,
    shell,
    start: () => {
      upstreams.start();
      sweeper = setInterval(() => store.sweep(now()), Math.min(60_000, config.AGENT_SESSION_TTL_S * 1000));
      sweeper.unref();
    },
    attach: (server) => {
      socket = chatSocket({
        config,
        auth,
        scopes: [AGENT_SCOPE],
        readiness,
        gate: runtime.gate,
        metrics: runtime.metrics,
        logger,
        message: useCases.message,
      });
      socket.attach(server);
    },
    close: () => {
      socket?.close();
      shell.close();
      upstreams.stop();
      if (sweeper !== undefined) clearInterval(sweeper);
    },
  };
}
