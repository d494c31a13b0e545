import { GpuSummarySchema } from '@clinicalsuite/kit/gpu';
import { z } from 'zod';

export const HealthSchema = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('alpha2_service'),
  vllm_server: z
    .enum(['healthy', 'loading', 'unavailable'])
    .describe('The model backend (the spec keeps vLLM’s name)'),
  model: z.string(),
  timestamp: z.string().describe('ISO 8601 without zone (UTC)'),
  backend: z.literal('node-llama-cpp'),
  reason: z.string().optional().describe('Why not ready, when not'),
});

export const StatusSchema = z.object({
  service: z.literal('alpha2_service'),
  status: z.enum(['ready', 'loading', 'not_ready', 'failed']),
  reason: z.string().nullable(),
  backend: z.object({ name: z.literal('node-llama-cpp'), version: z.string(), gpu: z.string().nullable() }),
  model: z.object({
    id: z.string(),
    path: z.string(),
    file: z.string(),
    loaded: z.boolean(),
    size_bytes: z.number().int().nullable(),
    architecture: z.string().nullable(),
    name: z.string().nullable().describe('The GGUF’s own name (general.name); null until loaded'),
    license: z
      .string()
      .nullable()
      .describe('The model manifest’s licence for its file, else the GGUF’s general.license; null: unknown'),
    chat_template: z
      .object({
        source: z.enum(['gguf', 'fallback']),
        wrapper: z.string(),
        note: z.string().nullable(),
      })
      .nullable(),
  }),
  context_size: z.number().int(),
  threads: z.number().int(),
  uv_threadpool_size: z
    .number()
    .int()
    .describe(
      'libuv thread pool size (UV_THREADPOOL_SIZE at start), where each decode and sampling step runs. The entry, dist/boot.cjs, picks it when unset: 1 when decoding on the CPU, one per slot plus one on a GPU, the sizes measured best there (services/llm/README.md, “Speed”)',
    ),
  gpu_layers: z.union([z.number().int(), z.string()]),
  slots: z.object({
    total: z.number().int(),
    in_use: z.number().int(),
    waiting: z.number().int(),
    queue_capacity: z.number().int(),
  }),
  context_tokens_in_use: z.number().int(),
  batching: z
    .object({
      steps: z.number().int().describe('Decode steps since the model was loaded'),
      mean_batch_size: z
        .number()
        .describe('Requests advanced per step on average: near MAX_CONCURRENCY when the slots are busy'),
    })
    .describe('How well concurrent requests share decode steps'),
  uptime_seconds: z.number(),
  timestamp: z.string(),
  gpu: GpuSummarySchema,
});
export type Status = z.infer<typeof StatusSchema>;
