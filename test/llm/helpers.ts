import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildLlmApp, type LlmService } from '../../services/llm/src/app.js';
import { loadLlmConfig, type LlmConfig } from '../../services/llm/src/config.js';
import { ensureTinyLlamaGguf } from '../fixtures/models/tiny-llama-gguf.js';
import { captureLogs, freePort } from '../kit/helpers.js';
import { REPO_ROOT } from '../kit/models/helpers.js';

export const TOKEN = 'test-token-llm';

export interface LlmTestServer {
  readonly service: LlmService;
  readonly config: LlmConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The tiny generated model (written once per machine into the temp dir). */
export function tinyModelPath(): string {
  return ensureTinyLlamaGguf();
}

/**
 * The text LLM on an ephemeral loopback port with the tiny model, one thread (the tiny model is
 * 20-40x slower with two threads on two busy cores), no GPU. `start: false` leaves the model unloaded.
 */
export async function startLlm(
  env: Record<string, string | undefined> = {},
  options: { start?: boolean; waitReady?: boolean } = {},
): Promise<LlmTestServer> {
  const config = loadLlmConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    API_TOKEN: TOKEN,
    MODEL_PATH: tinyModelPath(),
    THREADS: '1',
    GPU: 'false',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    MODEL_POLL_MS: '25',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    // The service lowers its event loop's priority on a CPU decode: here that thread is jest's.
    EVENT_LOOP_NICE: '0',
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildLlmApp({
    config,
    logger: createLogger({ service: 'llm', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  const server = await serve(service.kit, {
    signals: [],
    exit: false,
    onShutdown: () => service.host.close(),
  });
  if (options.start !== false) {
    service.host.start();
    if (options.waitReady !== false) await service.host.settled();
  }
  return { service, config, server, url: server.url, logs, close: () => server.shutdown('test finished') };
}

export const auth = { authorization: `Bearer ${TOKEN}` };

export async function post(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify(body),
    ...init,
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(5);
  }
}

/** Reads an SSE body into its `data:` payloads. */
export async function sseEvents(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice('data: '.length));
}

/**
 * Occupies a slot of the LLM at `url` with a long generation (the tiny model never stops early:
 * 3500 tokens take seconds) until `release()`; with MAX_CONCURRENCY 1 the next request waits in
 * its queue.
 */
export function occupyLlm(url: string): { release: () => void; done: Promise<unknown> } {
  const controller = new AbortController();
  const done = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({
      model: 'alpha-2-9b-it',
      messages: [{ role: 'user', content: 'go on' }],
      max_tokens: 3500,
    }),
    signal: controller.signal,
  })
    .then((r) => r.text())
    .catch(() => undefined);
  return { release: () => controller.abort(), done };
}

/** The service's built entry, as the runner and the operator start it. */
const LLM_ENTRY = join(REPO_ROOT, 'services', 'llm', 'dist', 'boot.cjs');

export interface LlmProcess {
  readonly url: string;
  readonly pid: number;
  stop(): void;
}

/**
 * Starts the built entry (dist/boot.cjs) as its own process with `env` (no model to load unless it
 * names one) and resolves once `path` answers 200; `stop` kills it.
 */
export async function startLlmEntry(
  env: Record<string, string>,
  path = '/status',
  timeoutMs = 20_000,
): Promise<LlmProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [LLM_ENTRY], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      API_TOKEN: TOKEN,
      MODEL_PATH: '/nonexistent/model.gguf',
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      LOG_LEVEL: 'error',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (data: Buffer) => (output += data.toString()));
  const url = `http://127.0.0.1:${String(port)}`;
  const running: LlmProcess = {
    url,
    pid: child.pid as number,
    stop: () => child.kill('SIGKILL'),
  };
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await fetch(`${url}${path}`, { headers: auth }).catch(() => null);
      if (res?.status === 200) return running;
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`boot.cjs did not answer ${path}:\n${output}`);
      await sleep(50);
    }
  } catch (error) {
    running.stop();
    throw error;
  }
}
