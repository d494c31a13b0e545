import { createLogger, serve } from '@clinicalsuite/kit';
import { buildMedllmApp } from '../../services/medllm/src/app.js';
import { loadMedllmConfig } from '../../services/medllm/src/config.js';
import { captureLogs } from '../kit/helpers.js';

/**
 * The medical LLM service without its llama-server binary, as test/medllm/service.test.ts starts
 * it ("without a backend binary"): its API answers (502 from the backend) and it registers all of
 * its metric families, which is what the metrics lint needs.
 */
export async function startMedllmForLint(): Promise<{ url: string; close(): Promise<void> }> {
  const config = loadMedllmConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    THREADS: '1',
    GPU_LAYERS: '0',
    NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
    LLAMA_SERVER_PATH: '/nonexistent/llama-server',
    MODEL_PATH: '/nonexistent/model.gguf',
    BACKEND_BACKOFF_MS: '500',
    BACKEND_HEALTH_INTERVAL_MS: '200',
    SHUTDOWN_GRACE_MS: '500',
    LOG_LEVEL: 'debug',
  });
  const { destination } = captureLogs();
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
  return { url: server.url, close: () => server.shutdown('test finished') };
}
