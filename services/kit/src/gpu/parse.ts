/**
 * Parsing `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`.
 *
 * Pure: text in, GPUs out. Malformed lines are skipped rather than thrown on, because nvidia-smi
 * interleaves warnings ("Unable to determine the device handle for GPU0000:41:00.0: Unknown Error")
 * with the rows of the GPUs it can still read.
 */

/** The fields asked for, in the order nvidia-smi prints them. */
export const NVIDIA_SMI_QUERY_FIELDS = [
  'index',
  'uuid',
  'name',
  'memory.total',
  'memory.used',
  'memory.free',
  'utilization.gpu',
  'temperature.gpu',
  'power.draw',
  'power.limit',
] as const;

/** The arguments the reader passes to nvidia-smi; the parser expects exactly this output. */
export const NVIDIA_SMI_ARGS: readonly string[] = [
  `--query-gpu=${NVIDIA_SMI_QUERY_FIELDS.join(',')}`,
  '--format=csv,noheader,nounits',
];

/** One GPU as nvidia-smi reports it. A field the driver cannot report (`[N/A]`, `[Not Supported]`) is null. */
export interface GpuInfo {
  /** nvidia-smi's index (PCI bus order), not the CUDA ordinal inside a process. */
  index: number;
  uuid: string;
  name: string;
  memoryTotalMb: number | null;
  memoryUsedMb: number | null;
  memoryFreeMb: number | null;
  /** 0..100; null on MIG-enabled GPUs, where nvidia-smi reports `[N/A]`. */
  utilizationPercent: number | null;
  temperatureCelsius: number | null;
  powerDrawWatts: number | null;
  powerLimitWatts: number | null;
}

/** The seven numeric columns after the name. */
const NUMERIC_TAIL = NVIDIA_SMI_QUERY_FIELDS.length - 3;

/**
 * `[N/A]`, `[Not Supported]`, `[Unknown Error]`, `[GPU is lost]`, `N/A`: anything that is not a plain
 * finite number is "no value". Returns undefined for text that is neither a number nor a bracketed
 * marker, so the caller can reject the line.
 */
function parseNumber(field: string): number | null | undefined {
  if (/^\[.*\]$/.test(field) || field === 'N/A') return null;
  if (!/^-?\d+(\.\d+)?$/.test(field)) return undefined;
  const value = Number(field);
  return Number.isFinite(value) ? value : undefined;
}

/** Parses one row; undefined when the line is not a GPU row for this query. */
export function parseNvidiaSmiLine(line: string): GpuInfo | undefined {
  const fields = line.split(',').map((field) => field.trim());
  // A name may itself contain ", " ("NVIDIA Graphics Device, 16GB"): everything between the uuid and
  // the numeric tail is the name.
  if (fields.length < NUMERIC_TAIL + 3) return undefined;
  const [indexField = '', uuid = ''] = fields;
  const name = fields.slice(2, fields.length - NUMERIC_TAIL).join(', ');
  if (!/^\d+$/.test(indexField) || uuid === '' || name === '') return undefined;

  const numbers = fields.slice(fields.length - NUMERIC_TAIL).map(parseNumber);
  const [total, used, free, utilization, temperature, powerDraw, powerLimit] = numbers;
  if (numbers.some((value) => value === undefined)) return undefined;

  return {
    index: Number(indexField),
    uuid,
    name,
    memoryTotalMb: total ?? null,
    memoryUsedMb: used ?? null,
    memoryFreeMb: free ?? null,
    utilizationPercent: utilization ?? null,
    temperatureCelsius: temperature ?? null,
    powerDrawWatts: powerDraw ?? null,
    powerLimitWatts: powerLimit ?? null,
  };
}

/** Parses the whole output (LF or CRLF, trailing blanks allowed); lines that are not GPU rows are skipped. */
export function parseNvidiaSmiCsv(text: string): GpuInfo[] {
  const gpus: GpuInfo[] = [];
  for (const line of text.split(/\r?\n/)) {
    const gpu = parseNvidiaSmiLine(line);
    if (gpu) gpus.push(gpu);
  }
  return gpus;
}
