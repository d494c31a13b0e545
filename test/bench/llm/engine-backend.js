// `engine`: the service's own engine (services/llm/dist/adapters/llama-engine.js) in this process:
// its lockstep loop on node-llama-cpp's native addon, with the prompt cache, stop handling and
// detokenizing the service runs, but no HTTP. `service / engine` is what HTTP, streaming and the
// request path cost; `engine / direct lockstep` what leaving node-llama-cpp's per-sequence
// evaluate() gains.
import { performance } from 'node:perf_hooks';
import { loadLlamaEngine } from '../../../services/llm/dist/adapters/llama-engine.js';
import { requestResult } from './generation.js';

/**
 * @param {object} o
 * @param {string} o.modelPath
 * @param {number} o.contextSize tokens per sequence
 * @param {number} o.sequences
 * @param {number} o.threads
 * @param {'cuda' | false} o.gpu
 * @param {number} o.maxTokens
 */
export async function engineBackend({ modelPath, contextSize, sequences, threads, gpu, maxTokens }) {
  const engine = await loadLlamaEngine({
    modelPath,
    sequences,
    contextSize,
    threads,
    gpu,
    gpuLayers: gpu === false ? 0 : 'max',
  });
  const params = { maxTokens, temperature: 0, stop: [], format: { type: 'text' } };
  return {
    name: 'engine',
    async generate(prompt) {
      const turns = [{ role: 'user', text: prompt }];
      const promptTokens = engine.countPromptTokens(turns);
      const start = performance.now();
      let first;
      const result = await engine.generate(
        turns,
        params,
        { onTokens: () => (first ??= performance.now()) },
        new AbortController().signal,
      );
      const end = performance.now();
      return requestResult({
        start,
        first,
        end,
        tokens: result.completionTokens,
        promptTokens,
        text: result.text,
      });
    },
    dispose: () => engine.dispose(),
  };
}
