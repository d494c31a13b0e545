import { describe, expect, it } from '@jest/globals';
import {
  GpuSummarySchema,
  parseNvidiaSmiCsv,
  summarizeGpu,
  type GpuStatus,
  type GpuSummary,
} from '@clinicalsuite/kit/gpu';
import { fixture } from './helpers.js';

const READ_AT = '2025-01-15T10:00:00.000Z';
const withGpus = (name: string): GpuStatus => ({
  available: true,
  device: 'cuda',
  gpus: parseNvidiaSmiCsv(fixture(name)),
  readAt: READ_AT,
});

describe('summarizeGpu', () => {
  it('flattens the first GPU and lists all of them in snake_case', () => {
    const summary = summarizeGpu(withGpus('l4-x2.txt'));
    const expected: GpuSummary = {
      available: true,
      device: 'cuda',
      gpu_name: 'NVIDIA L4',
      memory_total_mb: 23034,
      memory_used_mb: 15242,
      memory_free_mb: 7321,
      utilization_percent: 64,
      temperature_celsius: 58,
      gpus: [
        {
          index: 0,
          uuid: 'GPU-8f6e2d41-7c3b-4a9e-b512-6d0e9f3a1c27',
          name: 'NVIDIA L4',
          memory_total_mb: 23034,
          memory_used_mb: 15242,
          memory_free_mb: 7321,
          utilization_percent: 64,
          temperature_celsius: 58,
          power_draw_watts: 48.71,
          power_limit_watts: 72,
        },
        {
          index: 1,
          uuid: 'GPU-c2a94b70-15de-4f83-a6b9-0e7d3c58f412',
          name: 'NVIDIA L4',
          memory_total_mb: 23034,
          memory_used_mb: 0,
          memory_free_mb: 22563,
          utilization_percent: 0,
          temperature_celsius: 37,
          power_draw_watts: 16.27,
          power_limit_watts: 72,
        },
      ],
    };
    expect(summary).toEqual(expected);
    expect(GpuSummarySchema.parse(summary)).toEqual(summary);
  });

  it('keeps an unreported value null (MIG utilization)', () => {
    const summary = summarizeGpu(withGpus('a100-mig-enabled.txt'));
    expect(summary.utilization_percent).toBeNull();
    expect(summary.gpus.map((gpu) => gpu.utilization_percent)).toEqual([null, 92]);
    expect(GpuSummarySchema.safeParse(summary).success).toBe(true);
  });

  it('rounds MB and temperature to integers, keeps utilization and power as they are', () => {
    const [gpu] = parseNvidiaSmiCsv(fixture('h100-80gb-hbm3.txt'));
    const status: GpuStatus = {
      ...withGpus('h100-80gb-hbm3.txt'),
      gpus: [{ ...gpu!, memoryUsedMb: 40152.6, temperatureCelsius: 60.5, utilizationPercent: 87.5 }],
    };
    expect(summarizeGpu(status)).toMatchObject({
      memory_used_mb: 40153,
      temperature_celsius: 61,
      utilization_percent: 87.5,
      gpus: [expect.objectContaining({ power_draw_watts: 512.34, memory_used_mb: 40153 })],
    });
  });

  it('reports cpu with null fields, not zeros, without a GPU', () => {
    const summary = summarizeGpu({ available: false, device: 'cpu', gpus: [], readAt: READ_AT, error: 'x' });
    const expected: GpuSummary = {
      available: false,
      device: 'cpu',
      gpu_name: null,
      memory_total_mb: null,
      memory_used_mb: null,
      memory_free_mb: null,
      utilization_percent: null,
      temperature_celsius: null,
      gpus: [],
    };
    expect(summary).toEqual(expected);
    expect(GpuSummarySchema.parse(summary)).toEqual(summary);
  });
});
