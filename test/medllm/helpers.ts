import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildMedllmApp, type MedllmService } from '../../services/medllm/src/app.js';
import { loadMedllmConfig } from '../../services/medllm/src/config.js';
import { captureLogs } from '../kit/helpers.js';
import { authOffUnlessGiven } from '../fixtures/auth.js';

/**
 * The medical LLM service on a free local port, its backend manager started, logs captured: what
 * test/medllm/service.test.ts and the metrics lint (test/observability/medllm-helper.ts) both
 * start. `env` adds to or overrides the test settings (one thread, no GPU, short back-off and
 * health interval so restarts are seen quickly).
 */
export async function startMedllmService(env: Record<string, string>): Promise<{
  service: MedllmService;
  server: RunningServer;
  logs: Record<string, unknown>[];
}> {
  const config = loadMedllmConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    THREADS: '1',
    GPU_LAYERS: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    // Long enough that a request right after a kill finds the backend down (502), short for tests.
    BACKEND_BACKOFF_MS: '500',
    BACKEND_HEALTH_INTERVAL_MS: '200',
    SHUTDOWN_GRACE_MS: '500',
    LOG_LEVEL: 'debug',
    ...authOffUnlessGiven(env, 'MEDLLM_API_TOKEN'),
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildMedllmApp({
    config,
    logger: createLogger({ service: 'medllm', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  // serve() starts llama-server once it listens, and stops it on shutdown.
  const server = await serve(service.kit, { signals: [], exit: false });
  return { service, server, logs };
}

const BUILD_SCRIPT = new URL('../../services/medllm/scripts/build-llama-server.sh', import.meta.url).pathname;

/**
 * The llama-server binary for the real-backend tests: LLAMA_SERVER_PATH (the service's own
 * variable) if set, else the one services/medllm/scripts/build-llama-server.sh built (`--check`
 * prints its path); otherwise why there is none, for the skip message.
 */
export function findLlamaServer(): { path: string } | { reason: string } {
  const given = process.env.LLAMA_SERVER_PATH;
  if (given !== undefined && given !== '') {
    return existsSync(given) ? { path: given } : { reason: `LLAMA_SERVER_PATH=${given} does not exist` };
  }
  try {
    const out = execFileSync('bash', [BUILD_SCRIPT, '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const path = out.trim().split('\n').at(-1) ?? '';
    return existsSync(path) ? { path } : { reason: `the build script printed ${path}, which does not exist` };
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    return { reason: stderr || String(error) };
  }
}
