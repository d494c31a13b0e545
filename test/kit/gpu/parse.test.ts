import { describe, expect, it } from '@jest/globals';
import { NVIDIA_SMI_ARGS, parseNvidiaSmiCsv, type GpuInfo } from '@clinicalsuite/kit/gpu';
import { fixture } from './helpers.js';

describe('parseNvidiaSmiCsv on recorded outputs', () => {
  it('reads one H100', () => {
    const expected: GpuInfo[] = [
      {
        index: 0,
        uuid: 'GPU-3b1f0c2e-8a4d-5e7b-9c61-2f0a7d4e8b15',
        name: 'NVIDIA H100 80GB HBM3',
        memoryTotalMb: 81559,
        memoryUsedMb: 40153,
        memoryFreeMb: 40854,
        utilizationPercent: 87,
        temperatureCelsius: 61,
        powerDrawWatts: 512.34,
        powerLimitWatts: 700,
      },
    ];
    expect(parseNvidiaSmiCsv(fixture('h100-80gb-hbm3.txt'))).toEqual(expected);
  });

  it('reads a real capture from an idle H200 (driver 580, CUDA 13): reserved memory is neither used nor free', () => {
    expect(parseNvidiaSmiCsv(fixture('h200-real-capture.txt'))).toEqual([
      {
        index: 0,
        uuid: 'GPU-bbd84413-b2ff-1cc6-bb46-307fbef9cd90',
        name: 'NVIDIA H200',
        memoryTotalMb: 143771,
        memoryUsedMb: 0,
        memoryFreeMb: 143156,
        utilizationPercent: 0,
        temperatureCelsius: 39,
        powerDrawWatts: 82.21,
        powerLimitWatts: 700,
      },
    ]);
  });

  it('reads two L4s in index order', () => {
    const gpus = parseNvidiaSmiCsv(fixture('l4-x2.txt'));
    expect(gpus.map((gpu) => [gpu.index, gpu.name, gpu.memoryUsedMb, gpu.utilizationPercent])).toEqual([
      [0, 'NVIDIA L4', 15242, 64],
      [1, 'NVIDIA L4', 0, 0],
    ]);
    expect(gpus[1]).toMatchObject({
      uuid: 'GPU-c2a94b70-15de-4f83-a6b9-0e7d3c58f412',
      powerDrawWatts: 16.27,
    });
  });

  it('turns [N/A] power into null and keeps the rest', () => {
    expect(parseNvidiaSmiCsv(fixture('a100-power-na.txt'))).toEqual([
      expect.objectContaining({
        name: 'NVIDIA A100-PCIE-40GB',
        memoryTotalMb: 40960,
        utilizationPercent: 0,
        temperatureCelsius: 34,
        powerDrawWatts: null,
        powerLimitWatts: null,
      }),
    ]);
  });

  it('turns [N/A] utilization of a MIG-enabled GPU into null, not 0', () => {
    const [mig, plain] = parseNvidiaSmiCsv(fixture('a100-mig-enabled.txt'));
    expect(mig).toMatchObject({
      index: 0,
      utilizationPercent: null,
      memoryUsedMb: 13,
      powerDrawWatts: 64.12,
    });
    expect(plain).toMatchObject({ index: 1, utilizationPercent: 92, memoryUsedMb: 30207 });
  });

  it('turns [Not Supported] into null', () => {
    expect(parseNvidiaSmiCsv(fixture('gtx750ti-not-supported.txt'))).toEqual([
      expect.objectContaining({
        name: 'GeForce GTX 750 Ti',
        memoryFreeMb: 526,
        utilizationPercent: null,
        temperatureCelsius: 52,
        powerDrawWatts: null,
        powerLimitWatts: null,
      }),
    ]);
  });

  it('reads CRLF output without carriage returns in the values', () => {
    const text = fixture('rtx4090-windows-crlf.txt');
    expect(text).toContain('\r\n');
    expect(parseNvidiaSmiCsv(text)).toEqual([
      expect.objectContaining({ name: 'NVIDIA GeForce RTX 4090', powerLimitWatts: 450 }),
    ]);
  });

  it('skips the error line of a lost GPU and keeps the readable one', () => {
    const gpus = parseNvidiaSmiCsv(fixture('h100-one-gpu-lost.txt'));
    expect(gpus).toHaveLength(1);
    expect(gpus[0]).toMatchObject({ index: 0, utilizationPercent: 99, powerDrawWatts: 689.03 });
  });

  it('finds no GPU in the driver failure message', () => {
    expect(parseNvidiaSmiCsv(fixture('driver-failure.txt'))).toEqual([]);
  });
});

describe('parseNvidiaSmiCsv edge cases', () => {
  const row = (name: string, tail = '16384, 100, 16000, 5, 40, 30.50, 150.00') =>
    `3, GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee, ${name}, ${tail}`;

  it('keeps a name that itself contains a comma', () => {
    expect(parseNvidiaSmiCsv(row('NVIDIA Graphics Device, 16GB'))).toEqual([
      expect.objectContaining({ index: 3, name: 'NVIDIA Graphics Device, 16GB', memoryTotalMb: 16384 }),
    ]);
  });

  it('tolerates trailing whitespace, blank lines and CRLF', () => {
    const text = `\r\n  ${row('Tesla T4')}   \r\n\r\n${row('Tesla T4').replace('3,', '4,')}\t\n  \n`;
    expect(parseNvidiaSmiCsv(text).map((gpu) => [gpu.index, gpu.name, gpu.powerLimitWatts])).toEqual([
      [3, 'Tesla T4', 150],
      [4, 'Tesla T4', 150],
    ]);
  });

  it('skips malformed lines without throwing', () => {
    const lines = [
      'index, uuid, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], utilization.gpu [%], temperature.gpu, power.draw [W], power.limit [W]',
      row('Tesla T4', '16384, 100, 16000, 5, 40'),
      row('Tesla T4', '16384 MiB, 100 MiB, 16000 MiB, 5 %, 40, 30.50 W, 150.00 W'),
      row('Tesla T4', '16384, , 16000, 5, 40, 30.50, 150.00'),
      'x, GPU-1, Tesla T4, 16384, 100, 16000, 5, 40, 30.50, 150.00',
      '0, , Tesla T4, 16384, 100, 16000, 5, 40, 30.50, 150.00',
      'No devices were found',
      row('Tesla T4'),
    ];
    expect(parseNvidiaSmiCsv(lines.join('\n'))).toEqual([
      expect.objectContaining({ index: 3, name: 'Tesla T4' }),
    ]);
    expect(parseNvidiaSmiCsv('')).toEqual([]);
  });

  it('asks nvidia-smi for exactly the columns it parses', () => {
    expect(NVIDIA_SMI_ARGS).toEqual([
      '--query-gpu=index,uuid,name,memory.total,memory.used,memory.free,utilization.gpu,temperature.gpu,power.draw,power.limit',
      '--format=csv,noheader,nounits',
    ]);
  });
});
