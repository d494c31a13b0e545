/**
 * GPU status for every ClinicalSuite service: nvidia-smi parsed, cached and filtered by
 * CUDA_VISIBLE_DEVICES, summarized for the GPU endpoints and exported as one shared gauge set.
 */
export {
  NVIDIA_SMI_ARGS,
  NVIDIA_SMI_QUERY_FIELDS,
  parseNvidiaSmiCsv,
  parseNvidiaSmiLine,
  type GpuInfo,
} from './parse.js';
export { filterVisibleDevices } from './visible-devices.js';
export {
  DEFAULT_GPU_CACHE_MS,
  DEFAULT_GPU_TIMEOUT_MS,
  GpuStatusReader,
  execFileRunner,
  type CommandRunner,
  type GpuStatus,
  type GpuStatusReaderOptions,
  type GpuStatusSource,
} from './reader.js';
export {
  GpuSummaryEntrySchema,
  GpuSummarySchema,
  summarizeGpu,
  summarizeGpuInfo,
  type GpuSummary,
  type GpuSummaryEntry,
} from './summary.js';
export { GPU_METRIC_NAMES, registerGpuMetrics } from './metrics.js';
