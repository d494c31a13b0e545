import { Gauge, type OpenMetricsContentType, type Registry } from 'prom-client';
import type { GpuInfo } from './parse.js';
import type { GpuStatus, GpuStatusSource } from './reader.js';

const BYTES_PER_MIB = 1024 * 1024;

/** The GPU gauges every ClinicalSuite service exports, in base units. */
export const GPU_METRIC_NAMES = {
  available: 'clinicalsuite_gpu_available',
  memoryTotalBytes: 'clinicalsuite_gpu_memory_total_bytes',
  memoryUsedBytes: 'clinicalsuite_gpu_memory_used_bytes',
  utilizationRatio: 'clinicalsuite_gpu_utilization_ratio',
  temperatureCelsius: 'clinicalsuite_gpu_temperature_celsius',
  powerDrawWatts: 'clinicalsuite_gpu_power_draw_watts',
} as const;

const GPU_LABELS = ['gpu', 'gpu_name', 'uuid'] as const;
type GpuLabel = (typeof GPU_LABELS)[number];

interface PerGpuGauge {
  name: string;
  help: string;
  value: (gpu: GpuInfo) => number | null;
}

// Division, not multiplication by 0.01: 87 / 100 prints as 0.87, 87 * 0.01 as 0.8700000000000001.
const scale = (value: number | null, multiply: number, divide = 1): number | null =>
  value === null ? null : (value * multiply) / divide;

const PER_GPU: readonly PerGpuGauge[] = [
  {
    name: GPU_METRIC_NAMES.memoryTotalBytes,
    help: 'Total GPU memory in bytes.',
    value: (gpu) => scale(gpu.memoryTotalMb, BYTES_PER_MIB),
  },
  {
    name: GPU_METRIC_NAMES.memoryUsedBytes,
    help: 'GPU memory in use in bytes.',
    value: (gpu) => scale(gpu.memoryUsedMb, BYTES_PER_MIB),
  },
  {
    name: GPU_METRIC_NAMES.utilizationRatio,
    help: 'GPU utilization over the last sample period, 0 to 1 (absent on MIG-enabled GPUs).',
    value: (gpu) => scale(gpu.utilizationPercent, 1, 100),
  },
  {
    name: GPU_METRIC_NAMES.temperatureCelsius,
    help: 'GPU core temperature in degrees Celsius.',
    value: (gpu) => gpu.temperatureCelsius,
  },
  {
    name: GPU_METRIC_NAMES.powerDrawWatts,
    help: 'GPU power draw in watts.',
    value: (gpu) => gpu.powerDrawWatts,
  },
];

const labelsOf = (gpu: GpuInfo): Record<GpuLabel, string> => ({
  gpu: String(gpu.index),
  gpu_name: gpu.name,
  uuid: gpu.uuid,
});

/**
 * Registers the GPU gauges on `registry`; each scrape reads `source` (which caches and
 * de-duplicates, so one scrape runs nvidia-smi at most once) and rewrites every series, so a GPU
 * that disappeared drops its series and a value the driver does not report is simply absent.
 * A failed read reports `clinicalsuite_gpu_available 0` and never fails the scrape.
 *
 * prom-client collects all metrics of a registry concurrently, so every gauge collects for itself
 * from one shared per-scrape read rather than one gauge setting the others.
 */
export function registerGpuMetrics(
  registry: Registry | Registry<OpenMetricsContentType>,
  source: GpuStatusSource,
): void {
  let pending: Promise<GpuStatus | undefined> | undefined;
  const snapshot = (): Promise<GpuStatus | undefined> => {
    pending ??= safeRead(source).finally(() => {
      pending = undefined;
    });
    return pending;
  };

  new Gauge({
    name: GPU_METRIC_NAMES.available,
    help: '1 when this service can use at least one GPU, else 0.',
    registers: [registry],
    async collect() {
      const status = await snapshot();
      this.set(status?.available === true ? 1 : 0);
    },
  });

  for (const spec of PER_GPU) {
    new Gauge<GpuLabel>({
      name: spec.name,
      help: spec.help,
      labelNames: GPU_LABELS,
      registers: [registry],
      async collect() {
        const status = await snapshot();
        this.reset();
        for (const gpu of status?.available === true ? status.gpus : []) {
          const value = spec.value(gpu);
          if (value !== null) this.set(labelsOf(gpu), value);
        }
      },
    });
  }
}

async function safeRead(source: GpuStatusSource): Promise<GpuStatus | undefined> {
  try {
    return await source.read();
  } catch {
    return undefined;
  }
}
