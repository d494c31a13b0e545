import { z } from 'zod';
import type { GpuInfo } from './parse.js';
import type { GpuStatus } from './reader.js';

/** One GPU in a response body (snake_case, as every ClinicalSuite API spells fields). */
export const GpuSummaryEntrySchema = z.object({
  index: z.number().int(),
  uuid: z.string(),
  name: z.string(),
  memory_total_mb: z.number().int().nullable(),
  memory_used_mb: z.number().int().nullable(),
  memory_free_mb: z.number().int().nullable(),
  utilization_percent: z.number().nullable(),
  temperature_celsius: z.number().int().nullable(),
  power_draw_watts: z.number().nullable(),
  power_limit_watts: z.number().nullable(),
});
export type GpuSummaryEntry = z.infer<typeof GpuSummaryEntrySchema>;

/**
 * The body of the face service's `/gpu_status` (flat fields describe the first visible GPU), plus
 * `gpus`, the full list the agent's `/gpu` and the reasoning engine's `/api/v1/gpu/status` return.
 *
 * Without a GPU: `available: false`, `device: 'cpu'`, `gpu_name: null` and every number null, never 0,
 * so "unknown" is never mistaken for "a GPU with 0 MB free". A field the driver does not report
 * (utilization on a MIG-enabled GPU) is null for the same reason.
 */
export const GpuSummarySchema = z.object({
  available: z.boolean(),
  device: z.enum(['cuda', 'cpu']),
  gpu_name: z.string().nullable(),
  memory_total_mb: z.number().int().nullable(),
  memory_used_mb: z.number().int().nullable(),
  memory_free_mb: z.number().int().nullable(),
  utilization_percent: z.number().nullable(),
  temperature_celsius: z.number().int().nullable(),
  gpus: z.array(GpuSummaryEntrySchema),
});
export type GpuSummary = z.infer<typeof GpuSummarySchema>;

const int = (value: number | null): number | null => (value === null ? null : Math.round(value));

export function summarizeGpuInfo(gpu: GpuInfo): GpuSummaryEntry {
  return {
    index: gpu.index,
    uuid: gpu.uuid,
    name: gpu.name,
    memory_total_mb: int(gpu.memoryTotalMb),
    memory_used_mb: int(gpu.memoryUsedMb),
    memory_free_mb: int(gpu.memoryFreeMb),
    utilization_percent: gpu.utilizationPercent,
    temperature_celsius: int(gpu.temperatureCelsius),
    power_draw_watts: gpu.powerDrawWatts,
    power_limit_watts: gpu.powerLimitWatts,
  };
}

/** Pure: the response body for a status. */
export function summarizeGpu(status: GpuStatus): GpuSummary {
  const gpus = status.available ? status.gpus.map(summarizeGpuInfo) : [];
  const first = gpus[0];
  return {
    available: first !== undefined,
    device: first === undefined ? 'cpu' : 'cuda',
    gpu_name: first?.name ?? null,
    memory_total_mb: first?.memory_total_mb ?? null,
    memory_used_mb: first?.memory_used_mb ?? null,
    memory_free_mb: first?.memory_free_mb ?? null,
    utilization_percent: first?.utilization_percent ?? null,
    temperature_celsius: first?.temperature_celsius ?? null,
    gpus,
  };
}
