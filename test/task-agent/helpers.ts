import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildTaskAgentApp, type TaskAgentService } from '../../services/task-agent/src/app.js';
import { loadTaskAgentConfig, type TaskAgentConfig } from '../../services/task-agent/src/config.js';
import { captureLogs, freePort } from '../kit/helpers.js';
import { TOKEN as LLM_TOKEN } from '../llm/helpers.js';

/** The task agent's bearer token in tests (what the proxy presents). */
export const TASK_AGENT_TOKEN = 'test-task-agent-token-0123456789';
export const taskAgentAuth = { authorization: `Bearer ${TASK_AGENT_TOKEN}` };

/**
 * Settings for tests on the tiny model: short steps (the tiny model writes gibberish under the step
 * grammar, so steps must be long enough to close the JSON), fast polls and ticks, a short lease.
 */
export const TEST_ENV: Readonly<Record<string, string>> = {
  HOST: '127.0.0.1',
  PORT: '0',
  TASK_AGENT_API_TOKEN: TASK_AGENT_TOKEN,
  API_TOKEN: LLM_TOKEN,
  NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
  // Greedy decoding of the tiny model finishes every run at step 1; sampled with this seed its
  // first step calls a skill (test/task-agent/plan-act.test.ts).
  TASK_AGENT_TEMPERATURE: '1',
  TASK_AGENT_SEED: '3',
  TASK_AGENT_STEP_MAX_TOKENS: '1024',
  TASK_AGENT_THOUGHT_MAX_CHARS: '30',
  TASK_AGENT_ANSWER_MAX_CHARS: '120',
  TASK_AGENT_CHAT_MAX_TOKENS: '12',
  TASK_AGENT_MAX_STEPS: '3',
  TASK_AGENT_WORKERS: '1',
  TASK_AGENT_POLL_MS: '50',
  TASK_AGENT_TICK_MS: '100',
  TASK_AGENT_LEASE_MS: '1500',
  TASK_AGENT_LLM_PROBE_MS: '200',
  TASK_AGENT_LLM_BACKOFF_MS: '10',
  SHUTDOWN_GRACE_MS: '1000',
  LOG_LEVEL: 'debug',
};

export interface TaskAgentTestServer {
  readonly service: TaskAgentService;
  readonly config: TaskAgentConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** A fresh SQLite file path in a temp directory. */
export function tempSqlitePath(): string {
  return join(mkdtempSync(join(tmpdir(), 'task-agent-')), 'task-agent.sqlite');
}

/**
 * The task agent in this process on an ephemeral loopback port. `env` gives LLM_URL and the store
 * (TASK_AGENT_DB or DATABASE_URL); waits until the store is open and the LLM was checked once.
 */
export async function startTaskAgent(env: Record<string, string>): Promise<TaskAgentTestServer> {
  const config = loadTaskAgentConfig({ ...TEST_ENV, ...env });
  const { logs, destination } = captureLogs();
  const service = buildTaskAgentApp({
    config,
    logger: createLogger({ service: 'task-agent', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  const server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => service.close() });
  await service.start();
  await service.monitor.check();
  return {
    service,
    config,
    server,
    url: server.url,
    logs,
    close: () => server.shutdown('test finished'),
  };
}

export interface TaskAgentProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILL: no shutdown hook runs, nothing is written. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
}

const MAIN = new URL('../../services/task-agent/dist/main.js', import.meta.url).pathname;

/**
 * The built task agent as a real process (`npm test` builds services/task-agent/dist first), for
 * tests that kill it. Resolves once /health answers 200 and the LLM was seen up (or `waitLlm`
 * false).
 */
export async function startTaskAgentProcess(
  env: Record<string, string>,
  options: { waitLlm?: boolean } = {},
): Promise<TaskAgentProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...TEST_ENV, LOG_LEVEL: 'warn', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${String(port)}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`the task agent exited (${child.exitCode}): ${stderr}`);
    const health = await fetch(`${url}/health`).then(
      async (r) => (r.status === 200 ? ((await r.json()) as { llm: { state: string } }) : undefined),
      () => undefined,
    );
    if (health !== undefined && (options.waitLlm === false || health.llm.state === 'up')) break;
    if (i > 300) throw new Error(`the task agent did not become healthy: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    child,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export async function api(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...taskAgentAuth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

export { sleep, until } from '../kit/helpers.js';
