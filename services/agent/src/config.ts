import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, env, kitConfigSchema, loadConfig } from '@clinicalsuite/kit';
import { z } from 'zod';
import { UPSTREAM_IDS, type UpstreamId } from './domain/types.js';

/**
 * The agent's configuration: the kit's variables and the agent's own, parsed once at start-up. The
 * operator and the local runner set LLM_URL, API_TOKEN, AI_AGENT_API_TOKEN and each sub-service's
 * `<NAME>_URL`; the rest has defaults.
 */

const list = () =>
  z.string().transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== ''),
  );

/** Commands `/shell` may run when enabled and SHELL_ALLOWLIST is unset: read-only inspection. */
export const DEFAULT_SHELL_ALLOWLIST = [
  'ls',
  'cat',
  'head',
  'tail',
  'wc',
  'grep',
  'echo',
  'pwd',
  'date',
  'df',
  'du',
  'uname',
  'uptime',
  'free',
  'nvidia-smi',
  'stat',
  'sort',
  'uniq',
] as const;

export const agentConfigSchema = kitConfigSchema({
  port: 8002,
  maxConcurrency: 16,
  queueSize: 256,
  queueTimeoutMs: 60_000,
  // The text LLM's own deadline is 600 s; the agent waits as long for a generation.
  requestTimeoutMs: 600_000,
  bodyLimit: '10mb',
  // A /shell command may run up to SHELL_MAX_TIMEOUT_S (300 s by default).
  childCpuSeconds: 300,
}).extend({
  /** The agent's bearer token (scope `ai_agent`); AUTH_TOKENS_FILE may add more. One of the two is required. */
  AI_AGENT_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),

  /** The suite's text LLM (OpenAI-compatible); the default of all three upstreams. */
  LLM_URL: env.url().optional(),
  /** Bearer token for the LLM upstreams (the suite's API_TOKEN). */
  API_TOKEN: z.string().optional(),
  /** Per-upstream base URL, token and model name; unset: LLM_URL, API_TOKEN, the upstream's first model. */
  AGENT_ALPHA4_URL: env.url().optional(),
  AGENT_BETA3_URL: env.url().optional(),
  AGENT_BETA_URL: env.url().optional(),
  AGENT_ALPHA4_TOKEN: z.string().optional(),
  AGENT_BETA3_TOKEN: z.string().optional(),
  AGENT_BETA_TOKEN: z.string().optional(),
  AGENT_ALPHA4_MODEL: z.string().min(1).optional(),
  AGENT_BETA3_MODEL: z.string().min(1).optional(),
  AGENT_BETA_MODEL: z.string().min(1).optional(),
  /** Deadline of one non-streamed LLM attempt. */
  AGENT_LLM_TIMEOUT_MS: env.ms({ min: 50 }).default(300_000),
  /**
   * A streamed reply that sends nothing for this long, before its first fragment or between two, is
   * failed over (before its first fragment) or ended (after it: an error event).
   */
  AGENT_LLM_FIRST_BYTE_TIMEOUT_MS: env.ms({ min: 50 }).default(60_000),
  /** Further attempts on the same upstream after a connection error or a 502/503/504. */
  AGENT_LLM_RETRIES: env.int({ min: 0, max: 10 }).default(1),
  /** First backoff between attempts, doubled each time (with jitter). */
  AGENT_LLM_BACKOFF_MS: env.int({ min: 0, max: 60_000 }).default(200),
  /** An upstream that failed is skipped for this long (unless every other one is too). */
  AGENT_LLM_COOLDOWN_MS: env.int({ min: 0, max: 3_600_000 }).default(30_000),
  /** How often each upstream's health is checked (readiness and /status). */
  AGENT_LLM_PROBE_MS: env.int({ min: 10, max: 600_000 }).default(10_000),
  /** The upstream model's context window, in tokens: history is trimmed to fit it. */
  AGENT_CONTEXT_TOKENS: env.int({ min: 256, max: 1_048_576 }).default(4096),
  /** Tokens per reply on /run, /chat, /analyze, /code, /debug, /translate, /summarize unless the request says. */
  AGENT_MAX_TOKENS: env.int({ min: 1, max: 32_768 }).default(1024),
  /** Sampling temperature where the request sets none (chat-completions keep the spec's 0.7). */
  AGENT_TEMPERATURE: env.number({ min: 0, max: 2 }).default(0.3),
  /** Longest user message, in characters. */
  AGENT_MAX_MESSAGE_CHARS: env.int({ min: 1, max: 10_000_000 }).default(100_000),
  /** Ask the LLM to classify a message when the keyword rules are unsure (else `chat`). */
  AGENT_INTENT_LLM: env.bool().default(true),

  /** A WebSocket without `?token=` must send its auth frame within this time (else 1008). */
  AGENT_WS_AUTH_TIMEOUT_MS: env.ms({ min: 100, max: 60_000 }).default(5000),
  /** WebSockets waiting for their auth frame from one client address; past it 1013. */
  AGENT_WS_MAX_PENDING_PER_IP: env.int({ min: 1, max: 100_000 }).default(8),
  /** WebSockets waiting for their auth frame in all; past it 1013. */
  AGENT_WS_MAX_PENDING: env.int({ min: 1, max: 1_000_000 }).default(256),

  /** A session idle this long is forgotten. */
  AGENT_SESSION_TTL_S: env.int({ min: 1, max: 30 * 86_400 }).default(3600),
  /** Sessions held at once (per replica); past it the least recently used one is dropped. */
  AGENT_MAX_SESSIONS: env.int({ min: 1, max: 1_000_000 }).default(10_000),
  /** Messages kept per session (oldest dropped first); the token budget trims further per call. */
  AGENT_SESSION_MAX_MESSAGES: env.int({ min: 2, max: 100_000 }).default(200),

  /** Sub-services (base URLs); one left unset answers 503 naming it. */
  STT_URL: env.url().optional(),
  OCR_URL: env.url().optional(),
  TTS_URL: env.url().optional(),
  CODE_SEARCH_URL: env.url().optional(),
  PATIENT_SIM_URL: env.url().optional(),
  FACE_URL: env.url().optional(),
  /**
   * The bearer token the agent presents to each sub-service (that service's own token); a
   * `user:token@` part of its URL is the alternative.
   */
  STT_API_TOKEN: z.string().optional(),
  OCR_API_TOKEN: z.string().optional(),
  TTS_API_TOKEN: z.string().optional(),
  CODE_SEARCH_API_TOKEN: z.string().optional(),
  PATIENT_SIM_API_TOKEN: z.string().optional(),
  FACE_API_TOKEN: z.string().optional(),
  /** Deadline of one sub-service call (speech and OCR of long files take time). */
  AGENT_SUBSERVICE_TIMEOUT_MS: env.ms({ min: 50 }).default(300_000),
  /** Deadline of each sub-service check on /status. */
  AGENT_STATUS_TIMEOUT_MS: env.int({ min: 50, max: 60_000 }).default(2000),
  /** Largest uploaded file (audio, image). */
  AGENT_UPLOAD_MAX_BYTES: env.bytes().default(50 * 1024 * 1024),

  /** `/shell` runs commands only when true; otherwise it answers 403. */
  SHELL_EXEC_ENABLED: env.bool().default(false),
  /** Program names `/shell` may run (comma-separated); nothing else ever runs. */
  SHELL_ALLOWLIST: list().default([...DEFAULT_SHELL_ALLOWLIST]),
  /** The directory commands run in; a request's `workdir` must lie inside it. Default: <DATA_DIR or tmp>/shell. */
  SHELL_WORKDIR: z.string().min(1).optional(),
  /** Run commands as this uid/gid (default when the agent runs as root: 65534, nobody). */
  SHELL_RUN_AS_UID: env.int({ min: 0, max: 4_294_967_294 }).optional(),
  SHELL_RUN_AS_GID: env.int({ min: 0, max: 4_294_967_294 }).optional(),
  /** Longest `timeout` a request may ask for, in seconds. */
  SHELL_MAX_TIMEOUT_S: env.int({ min: 1, max: 3600 }).default(300),
  /** Bytes of stdout and of stderr kept per command; the rest is cut and flagged. */
  SHELL_MAX_OUTPUT_BYTES: env.int({ min: 1024, max: 64 * 1024 * 1024 }).default(64 * 1024),
  /** Longest `command`, in characters. */
  SHELL_MAX_COMMAND_CHARS: env.int({ min: 16, max: 100_000 }).default(2000),
  /** Let the LLM turn a natural-language request into a command (still checked like any other). */
  SHELL_TRANSLATE: env.bool().default(true),
});

export interface UpstreamConfig {
  readonly id: UpstreamId;
  readonly baseUrl: string;
  readonly token: string | undefined;
  /** The model name to send; undefined: the upstream's first listed model. */
  readonly model: string | undefined;
}

export type AgentConfig = z.output<typeof agentConfigSchema> & {
  /** The three LLM upstreams, in UPSTREAM_IDS order. */
  readonly upstreams: readonly UpstreamConfig[];
  /** SHELL_WORKDIR, resolved. */
  readonly shellWorkdir: string;
};

type Env = Readonly<Record<string, string | undefined>>;

const UPSTREAM_ENV: Readonly<Record<UpstreamId, 'ALPHA4' | 'BETA3' | 'BETA'>> = {
  alpha4_service: 'ALPHA4',
  beta3_service: 'BETA3',
  beta_service: 'BETA',
};

export function loadAgentConfig(source: Env = process.env): AgentConfig {
  const config = loadConfig(agentConfigSchema, source);
  const problems: string[] = [];
  const upstreams = UPSTREAM_IDS.map((id): UpstreamConfig | undefined => {
    const name = UPSTREAM_ENV[id];
    const baseUrl = config[`AGENT_${name}_URL`] ?? config.LLM_URL;
    if (baseUrl === undefined) {
      problems.push(`AGENT_${name}_URL: is required when LLM_URL is not set (the ${id} upstream)`);
      return undefined;
    }
    return {
      id,
      baseUrl,
      token: config[`AGENT_${name}_TOKEN`] ?? config.API_TOKEN,
      model: config[`AGENT_${name}_MODEL`],
    };
  });
  const unknown = config.SHELL_ALLOWLIST.filter((c) => !/^[A-Za-z0-9._+-]+$/.test(c));
  if (unknown.length > 0) {
    problems.push(
      `SHELL_ALLOWLIST: entries must be plain program names (no paths, spaces or shell syntax): ${unknown.join(', ')}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    ...config,
    upstreams: upstreams.filter((u): u is UpstreamConfig => u !== undefined),
    shellWorkdir: config.SHELL_WORKDIR ?? join(config.DATA_DIR ?? tmpdir(), 'shell'),
  };
}
