import type { GpuInfo } from './parse.js';

/**
 * Applies a CUDA_VISIBLE_DEVICES value to what nvidia-smi reports. nvidia-smi ignores that variable
 * and always lists every GPU on the host, so a service must filter to report what it can use.
 *
 * Semantics follow CUDA's:
 * - `undefined` (variable unset): every GPU.
 * - `""`, `"-1"`: none.
 * - a comma list of nvidia-smi indices (`"0,2"`) or UUIDs (`"GPU-8f6e..."`, a unique prefix is
 *   enough, as CUDA allows); the result is in list order, the order CUDA numbers the devices.
 * - the list ends at the first entry that names no GPU (`"0,-1,1"` is `"0"`), as in CUDA.
 * - a repeated entry is listed once.
 *
 * MIG device UUIDs (`MIG-...`) cannot be mapped to their parent GPU from this query; such an entry
 * ends the list like any other unknown one.
 */
export function filterVisibleDevices(
  gpus: readonly GpuInfo[],
  visibleDevices: string | undefined,
): GpuInfo[] {
  if (visibleDevices === undefined) return [...gpus];
  const visible: GpuInfo[] = [];
  for (const entry of visibleDevices.split(',').map((token) => token.trim())) {
    const gpu = resolve(gpus, entry);
    if (!gpu) break;
    if (!visible.includes(gpu)) visible.push(gpu);
  }
  return visible;
}

function resolve(gpus: readonly GpuInfo[], entry: string): GpuInfo | undefined {
  if (/^\d+$/.test(entry)) return gpus.find((gpu) => gpu.index === Number(entry));
  if (!/^GPU-[0-9a-f-]+$/i.test(entry)) return undefined;
  const prefix = entry.toLowerCase();
  const matches = gpus.filter((gpu) => gpu.uuid.toLowerCase().startsWith(prefix));
  return matches.length === 1 ? matches[0] : undefined;
}
