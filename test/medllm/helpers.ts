import { createLogger, serve, type RunningServer } from '@clinicalsuite/kit';
import { buildMedllmApp, type MedllmService } from '../../services/medllm/src/app.js';
import { loadMedllmConfig } from '../../services/medllm/src/config.js';
import { captureLogs } from '../kit/helpers.js';

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
    ...env,
  });
  const { logs, destination } = captureLogs();
  const service = buildMedllmApp({
    config,
    logger: createLogger({ service: 'medllm', level: config.LOG_LEVEL, destination }),
    processMetrics: false,
  });
  const server = await serve(service.kit, {
    signals: [],
    exit: false,
    onShutdown: () => service.backend.close(),
  });
  service.backend.start();
  return { service, server, logs };
}
