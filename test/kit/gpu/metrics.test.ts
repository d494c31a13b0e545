import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import {
  GpuStatusReader,
  parseNvidiaSmiCsv,
  registerGpuMetrics,
  type GpuStatusSource,
} from '@clinicalsuite/kit/gpu';
import { execError, fixture, scriptedRunner } from './helpers.js';

const L4_0 = 'gpu="0",gpu_name="NVIDIA L4",uuid="GPU-8f6e2d41-7c3b-4a9e-b512-6d0e9f3a1c27"';
const L4_1 = 'gpu="1",gpu_name="NVIDIA L4",uuid="GPU-c2a94b70-15de-4f83-a6b9-0e7d3c58f412"';
const PER_GPU = [
  'clinicalsuite_gpu_memory_total_bytes',
  'clinicalsuite_gpu_memory_used_bytes',
  'clinicalsuite_gpu_utilization_ratio',
  'clinicalsuite_gpu_temperature_celsius',
  'clinicalsuite_gpu_power_draw_watts',
];

async function scrape(source: GpuStatusSource, registry = new Registry()): Promise<string[]> {
  if (!registry.getSingleMetric('clinicalsuite_gpu_available')) registerGpuMetrics(registry, source);
  return (await registry.metrics()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));
}

describe('registerGpuMetrics', () => {
  it('exports every gauge for two GPUs, in base units', async () => {
    const runner = scriptedRunner(fixture('l4-x2.txt'));
    const samples = await scrape(new GpuStatusReader({ runner, cacheMs: 0 }));
    expect(samples.sort()).toEqual(
      [
        'clinicalsuite_gpu_available 1',
        `clinicalsuite_gpu_memory_total_bytes{${L4_0}} 24152899584`,
        `clinicalsuite_gpu_memory_total_bytes{${L4_1}} 24152899584`,
        `clinicalsuite_gpu_memory_used_bytes{${L4_0}} 15982395392`,
        `clinicalsuite_gpu_memory_used_bytes{${L4_1}} 0`,
        `clinicalsuite_gpu_utilization_ratio{${L4_0}} 0.64`,
        `clinicalsuite_gpu_utilization_ratio{${L4_1}} 0`,
        `clinicalsuite_gpu_temperature_celsius{${L4_0}} 58`,
        `clinicalsuite_gpu_temperature_celsius{${L4_1}} 37`,
        `clinicalsuite_gpu_power_draw_watts{${L4_0}} 48.71`,
        `clinicalsuite_gpu_power_draw_watts{${L4_1}} 16.27`,
      ].sort(),
    );
    expect(runner.calls).toHaveLength(1);
  });

  it('declares each metric as a gauge with help', async () => {
    const registry = new Registry();
    registerGpuMetrics(registry, new GpuStatusReader({ runner: scriptedRunner('') }));
    const text = await registry.metrics();
    for (const name of ['clinicalsuite_gpu_available', ...PER_GPU]) {
      expect(text).toContain(`# TYPE ${name} gauge`);
      expect(text).toMatch(new RegExp(`# HELP ${name} \\S`));
    }
  });

  it('exports only clinicalsuite_gpu_available 0 without a GPU', async () => {
    const runner = scriptedRunner(execError({ code: 'ENOENT' }));
    expect(await scrape(new GpuStatusReader({ runner }))).toEqual(['clinicalsuite_gpu_available 0']);
  });

  it('drops the series of a GPU that vanished and recovers the next scrape', async () => {
    const twoThenOne = scriptedRunner(
      fixture('l4-x2.txt'),
      fixture('l4-x2.txt').split('\n')[0]!,
      execError({ code: 9, stdout: fixture('driver-failure.txt') }),
    );
    const registry = new Registry();
    const reader = new GpuStatusReader({ runner: twoThenOne, cacheMs: 0 });
    expect((await scrape(reader, registry)).filter((line) => line.includes('gpu="1"'))).toHaveLength(5);

    const second = await scrape(reader, registry);
    expect(second.filter((line) => line.includes('gpu="1"'))).toEqual([]);
    expect(second).toContain(`clinicalsuite_gpu_temperature_celsius{${L4_0}} 58`);

    expect(await scrape(reader, registry)).toEqual(['clinicalsuite_gpu_available 0']);
  });

  it('leaves out values the driver does not report', async () => {
    const samples = await scrape(
      new GpuStatusReader({ runner: scriptedRunner(fixture('a100-mig-enabled.txt')) }),
    );
    const utilization = samples.filter((line) => line.startsWith('clinicalsuite_gpu_utilization_ratio'));
    expect(utilization).toEqual([
      'clinicalsuite_gpu_utilization_ratio{gpu="1",gpu_name="NVIDIA A100-SXM4-80GB",uuid="GPU-71d0f8a6-c94e-4b21-8f3a-5e2b9d06c7a4"} 0.92',
    ]);
    expect(samples.filter((line) => line.includes('gpu="0"'))).toHaveLength(4);
  });

  it('reports only the visible GPUs', async () => {
    const reader = new GpuStatusReader({ runner: scriptedRunner(fixture('l4-x2.txt')), visibleDevices: '1' });
    const samples = await scrape(reader);
    expect(samples.filter((line) => line.includes('gpu="0"'))).toEqual([]);
    expect(samples).toContain(`clinicalsuite_gpu_power_draw_watts{${L4_1}} 16.27`);
  });

  it('reads the source once per scrape, even a source that neither caches nor de-duplicates', async () => {
    let reads = 0;
    const gpus = parseNvidiaSmiCsv(fixture('l4-x2.txt'));
    const source: GpuStatusSource = {
      read: () => {
        reads += 1;
        return Promise.resolve({ available: true, device: 'cuda', gpus, readAt: new Date().toISOString() });
      },
    };
    const registry = new Registry();
    expect(await scrape(source, registry)).toHaveLength(11);
    expect(reads).toBe(1);
    await scrape(source, registry);
    expect(reads).toBe(2);
  });

  it('never fails the scrape, even when the source throws', async () => {
    const broken: GpuStatusSource = { read: () => Promise.reject(new Error('boom')) };
    expect(await scrape(broken)).toEqual(['clinicalsuite_gpu_available 0']);
  });
});
