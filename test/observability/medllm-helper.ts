import { startMedllmService } from '../medllm/helpers.js';

/**
 * The medical LLM service without its llama-server binary, as test/medllm/service.test.ts starts
 * it ("without a backend binary"): its API answers (502 from the backend) and it registers all of
 * its metric families, which is what the metrics lint needs.
 */
export async function startMedllmForLint(): Promise<{ url: string; close(): Promise<void> }> {
  const { server } = await startMedllmService({
    LLAMA_SERVER_PATH: '/nonexistent/llama-server',
    MODEL_PATH: '/nonexistent/model.gguf',
  });
  return { url: server.url, close: () => server.shutdown('test finished') };
}
