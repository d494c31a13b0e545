import { createServer, type ServerResponse } from 'node:http';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildPatientSimApp, type PatientSimService } from '../../services/patient-sim/src/app.js';
import { loadPatientSimConfig, type PatientSimConfig } from '../../services/patient-sim/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { TOKEN as LLM_TOKEN } from '../llm/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

export { LLM_TOKEN };

export interface SimTestServer {
  readonly service: PatientSimService;
  readonly config: PatientSimConfig;
  readonly server: RunningServer;
  readonly url: string;
  readonly logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * The patient simulator on an ephemeral loopback port, pointed at `llmUrl`, greedy (temperature 0)
 * so its replies can be compared with the LLM's own. `waitReady` waits until it saw the LLM up.
 */
export async function startSim(
  llmUrl: string,
  env: Record<string, string> = {},
  options: { waitReady?: boolean; now?: () => number } = {},
): Promise<SimTestServer> {
  const config = loadPatientSimConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    LLM_URL: llmUrl,
    API_TOKEN: LLM_TOKEN,
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    PATIENT_SIM_TEMPERATURE: '0',
    PATIENT_SIM_MAX_TOKENS: '24',
    PATIENT_SIM_LLM_PROBE_MS: '100',
    PATIENT_SIM_LLM_BACKOFF_MS: '20',
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'PATIENT_SIM_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildPatientSimApp({
    config,
    logger: createLogger({ service: 'patient-sim', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const server = await serve(service.kit, { signals: [], exit: false, onShutdown: () => service.close() });
  service.start();
  if (options.waitReady !== false) await service.monitor.check();
  return {
    service,
    config,
    server,
    url: server.url,
    logs,
    close: () => server.shutdown('test finished'),
  };
}

export async function postJson(url: string, body: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...init,
  });
}

export interface TurnBody {
  response: string;
  patient_id: string;
  session_id: string;
  new_session: boolean;
  language: string;
  turn: number;
  revealed: { id: string; category: string }[];
  findings: { id: string; kind: string; name: string; result: string }[];
  guard: string;
  model: string;
  finish_reason: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  processing_time_ms: number;
  llm_time_ms: number;
}

export async function turn(
  url: string,
  body: { message: string; patient_id: string; session_id?: string },
): Promise<TurnBody> {
  const res = await postJson(`${url}/patient`, body);
  const json = (await res.json()) as TurnBody;
  if (res.status !== 200) throw new Error(`POST /patient ${res.status}: ${JSON.stringify(json)}`);
  return json;
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

type Message = { role: string; content: string };

export interface ScriptedLlm {
  readonly url: string;
  /** The messages of every chat completion received, in order. */
  readonly requests: Message[][];
  /** What a chat completion answers (may wait: the test decides when the LLM replies). */
  respond: (messages: Message[]) => string | Promise<string>;
  close(): Promise<void>;
}

/**
 * An OpenAI-compatible LLM on a loopback port whose replies the test writes: for what no real
 * model can be made to say on cue (a fact quoted word for word, an empty regeneration) or when
 * (a reply held while the session's TTL passes). `/health` and `/v1/models` answer as the suite's
 * LLM does.
 */
export async function startScriptedLlm(): Promise<ScriptedLlm> {
  const requests: Message[][] = [];
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/health') {
        json(res, 200, { status: 'healthy', model: 'scripted' });
        return;
      }
      if (req.url === '/v1/models') {
        json(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model' }] });
        return;
      }
      if (req.url !== '/v1/chat/completions') {
        json(res, 404, { error: { message: 'not found' } });
        return;
      }
      const { messages } = JSON.parse(raw) as { messages: Message[] };
      requests.push(messages);
      void Promise.resolve(llm.respond(messages)).then((content) =>
        json(res, 200, {
          id: `chatcmpl-${requests.length}`,
          object: 'chat.completion',
          created: 0,
          model: 'scripted',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const llm: ScriptedLlm = {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond: () => 'I am not sure, doctor.',
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return llm;
}
