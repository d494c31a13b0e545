import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildPatientSimApp, type PatientSimService } from '../../services/patient-sim/src/app.js';
import { loadPatientSimConfig, type PatientSimConfig } from '../../services/patient-sim/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { TOKEN as LLM_TOKEN } from '../llm/helpers.js';

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
  options: { waitReady?: boolean } = {},
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
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildPatientSimApp({
    config,
    logger: createLogger({ service: 'patient-sim', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
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
