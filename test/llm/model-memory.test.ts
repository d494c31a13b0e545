import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { ModelDescription } from '../../services/llm/src/adapters/engine.js';
import {
  hugePagesBytes,
  hugePagesWarning,
  transparentHugePages,
} from '../../services/llm/src/adapters/model-memory.js';

const MiB = 2 ** 20;

const cpuModel: ModelDescription = {
  path: '/models/llm.gguf',
  sizeBytes: 250 * MiB,
  architecture: 'gemma3',
  name: null,
  license: null,
  chatTemplate: { source: 'gguf', wrapper: 'Gemma', note: null },
  gpu: null,
  gpuLayers: 0,
  layers: 18,
  backendVersion: '3.22.1',
  mapped: false,
};

const file = (text: string): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'model-memory-')), 'f');
  writeFileSync(path, text);
  return path;
};

describe('reading the kernel’s huge page figures', () => {
  it('takes AnonHugePages from smaps_rollup in bytes, and null where there is no such file', async () => {
    const rollup = 'Rss:              606328 kB\nAnonymous:        480000 kB\nAnonHugePages:    374784 kB\n';
    expect(await hugePagesBytes(file(rollup))).toBe(374784 * 1024);
    expect(await hugePagesBytes(file('Rss: 1 kB\n'))).toBeNull();
    expect(await hugePagesBytes('/nonexistent/smaps_rollup')).toBeNull();
  });

  it('takes the bracketed mode of transparent_hugepage/enabled', async () => {
    expect(await transparentHugePages(file('always [madvise] never\n'))).toBe('madvise');
    expect(await transparentHugePages(file('[always] madvise never\n'))).toBe('always');
    expect(await transparentHugePages('/nonexistent/enabled')).toBeNull();
  });
});

describe('hugePagesWarning', () => {
  const facts = { hugePagesBytes: 0, mode: 'madvise', tunables: undefined };

  it('is silent when the weights sit on huge pages, or the decode or the file make it moot', () => {
    expect(hugePagesWarning(cpuModel, { ...facts, hugePagesBytes: 260 * MiB })).toBeNull();
    expect(hugePagesWarning({ ...cpuModel, mapped: true }, facts)).toBeNull();
    expect(hugePagesWarning({ ...cpuModel, gpu: 'cuda', gpuLayers: 18 }, facts)).toBeNull();
    expect(hugePagesWarning(cpuModel, { ...facts, hugePagesBytes: null })).toBeNull();
  });

  it('names the cause: the host’s setting, the missing tunable, or the kernel’s free pages', () => {
    expect(hugePagesWarning(cpuModel, { ...facts, mode: 'never' })).toContain(
      'the host has transparent huge pages off (/sys/kernel/mm/transparent_hugepage/enabled: never)',
    );
    expect(hugePagesWarning(cpuModel, facts)).toContain(
      'the service was started without GLIBC_TUNABLES=glibc.malloc.hugetlb=1',
    );
    const fragmented = hugePagesWarning(cpuModel, {
      ...facts,
      hugePagesBytes: 20 * MiB,
      tunables: 'glibc.malloc.hugetlb=1',
    });
    expect(fragmented).toContain('only 20 MiB of the process sits on huge pages against 250 MiB of weights');
    expect(fragmented).toContain('too few free huge pages');
    // `always` needs no tunable: what is missing is then the kernel's.
    expect(hugePagesWarning(cpuModel, { ...facts, mode: 'always' })).toContain('too few free huge pages');
  });

  it('applies to a model split between the GPU and the CPU, whose CPU layers decode on every step', () => {
    expect(hugePagesWarning({ ...cpuModel, gpu: 'cuda', gpuLayers: 10 }, facts)).toContain('GLIBC_TUNABLES');
  });
});
