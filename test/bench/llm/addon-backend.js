// `addon lockstep`: node-llama-cpp's native addon driven directly, without its JavaScript layer
// (the per-sequence evaluate() generators, their locks, the decode queue and its dispatch on a
// later event-loop turn). One loop fills one batch with every request's next token, decodes it, and
// samples each request's token: two hand-offs to the addon per step, as llama-server's loop makes
// two calls. Not a path the service takes: these calls are internal to node-llama-cpp, and the
// sequence bookkeeping that prefix reuse relies on lives in the layer this skips. It measures how
// much of the gap to llama-server that layer is (services/llm/README.md, Speed).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { chatPrompt, tokensResult } from './generation.js';

/**
 * @param {object} o
 * @param {import('node-llama-cpp').LlamaModel} o.model
 * @param {import('node-llama-cpp').ChatWrapper} o.chatWrapper
 * @param {number} o.contextSize tokens per sequence
 * @param {number} o.sequences
 * @param {number} o.threads
 * @param {number} o.maxTokens
 */
export async function addonLockstepBackend({
  model,
  chatWrapper,
  contextSize,
  sequences,
  threads,
  maxTokens,
}) {
  const context = await model.createContext({ contextSize, sequences, threads });
  // The addon's context and sampler: node-llama-cpp's own objects, reached through its internals.
  const ctx = context._ctx;
  const { AddonSampler } = model._llama._bindings;
  const free = Array.from({ length: sequences }, (_, i) => i);
  const active = new Set();
  let driving = false;

  const finish = (job, error) => {
    active.delete(job);
    ctx.disposeSequence(job.id);
    job.sampler.dispose();
    free.push(job.id);
    if (error === undefined) job.resolve();
    else job.reject(error);
  };

  const drive = async () => {
    driving = true;
    try {
      while (active.size > 0) {
        const jobs = [...active];
        ctx.initBatch(jobs.reduce((n, job) => n + job.pending.length, 0));
        const logitIndexes = jobs.map(
          (job) =>
            ctx.addToBatch(
              job.id,
              job.position,
              Uint32Array.from(job.pending),
              Uint32Array.from([job.pending.length - 1]),
            )[0],
        );
        await ctx.decodeBatch();
        const tokens = await Promise.all(jobs.map((job, i) => ctx.sampleToken(logitIndexes[i], job.sampler)));
        const now = performance.now();
        jobs.forEach((job, i) => {
          job.position += job.pending.length;
          const token = tokens[i];
          if (token === -1 || model.isEogToken(token)) return finish(job);
          job.tokens.push(token);
          job.first ??= now;
          job.pending = [token];
          if (job.tokens.length >= maxTokens) finish(job);
        });
      }
    } catch (error) {
      for (const job of active) finish(job, error);
    } finally {
      driving = false;
    }
  };

  return {
    name: 'addon lockstep',
    async generate(prompt) {
      const start = performance.now();
      while (free.length === 0) await sleep(2);
      const { tokens: promptTokens } = chatPrompt(model, chatWrapper, prompt);
      const sampler = new AddonSampler(model._model);
      sampler.applyConfig({ temperature: 0 });
      const job = {
        id: free.shift(),
        sampler,
        position: 0,
        pending: [...promptTokens],
        tokens: [],
        first: undefined,
      };
      await new Promise((resolve, reject) => {
        Object.assign(job, { resolve, reject });
        active.add(job);
        if (!driving) void drive();
      });
      return tokensResult(model, { ...job, start, promptTokens: promptTokens.length });
    },
    dispose: () => context.dispose(),
  };
}
