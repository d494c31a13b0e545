/** @jest-environment ./test/face/ort-environment.cjs */
import { beforeAll, describe, expect, it } from '@jest/globals';
import { diagnosis, fakeNvidiaSmi, startReasoning, writeTestKb, type Json } from './service-helpers.js';

// GET /api/v1/gpu/status both ways: no GPU (the engine on CPU), REASONING_DEVICE=cuda where CUDA is
// not usable (the CPU fallback reported with its reason), and a fake nvidia-smi printing a fixture
// (the kit's GPU summary). On a machine with a real GPU the fallback expectations do not apply:
// those tests look at what nvidia-smi says first.

async function gpuStatus(url: string): Promise<Json> {
  const res = await fetch(`${url}/api/v1/gpu/status`);
  expect(res.status).toBe(200);
  return res.json();
}

describe('GPU status', () => {
  let kbDir: string;
  beforeAll(async () => {
    kbDir = await writeTestKb();
  });

  it('without a GPU: device cpu, the engine on CPU, auto reporting why', async () => {
    const srv = await startReasoning({ REASONING_KB_DIRS: kbDir, REASONING_DEVICE: 'auto' });
    try {
      const s = await gpuStatus(srv.url);
      expect(s).toMatchObject({
        available: false,
        device: 'cpu',
        gpu_name: null,
        memory_total_mb: null,
        gpus: [],
      });
      expect(s.engine).toEqual({
        kind: 'onnx',
        device: 'cpu',
        requested: 'auto',
        fallback_reason: 'no GPU visible, running on CPU',
        batches: 0,
        requests: 0,
        mean_batch_size: 0,
      });
      expect(s.engine_reason).toBeNull();
      const r = await diagnosis(srv.url, { findings: [{ feature: 'fever' }] });
      expect(r.body.model).toMatchObject({
        engine: 'onnx',
        device: 'cpu',
        device_reason: 'no GPU visible, running on CPU',
      });
      expect((await gpuStatus(srv.url)).engine).toMatchObject({
        batches: 1,
        requests: 1,
        mean_batch_size: 1,
      });
    } finally {
      await srv.close();
    }
  });

  it('REASONING_DEVICE=cuda where CUDA is not usable: runs on CPU and reports the fallback with its reason', async () => {
    const srv = await startReasoning({ REASONING_KB_DIRS: kbDir, REASONING_DEVICE: 'cuda' });
    try {
      const s = await gpuStatus(srv.url);
      if (s.available === true) return; // a real GPU: nothing to fall back from
      expect(s.engine).toMatchObject({ kind: 'onnx', device: 'cpu', requested: 'cuda' });
      expect(s.engine.fallback_reason).toMatch(
        /^REASONING_DEVICE=cuda but the CUDA execution provider is not usable .*; running on CPU$/,
      );
      const health = await fetch(`${srv.url}/health`);
      expect(health.status).toBe(200);
      const r = await diagnosis(srv.url, { text: 'sốt, phát ban', use_llm: false });
      expect(r.status).toBe(200);
      expect(r.body.model.device).toBe('cpu');
      expect(r.body.model.device_reason).toBe(s.engine.fallback_reason);
      expect(srv.logs.some((l) => l.msg === 'the CUDA engine cannot start; falling back to CPU')).toBe(true);
    } finally {
      await srv.close();
    }
  });

  it('with nvidia-smi reporting a GPU (a real H200 capture): the GPU summary, and auto tries CUDA', async () => {
    const srv = await startReasoning({
      REASONING_KB_DIRS: kbDir,
      REASONING_DEVICE: 'auto',
      NVIDIA_SMI_PATH: fakeNvidiaSmi('h200-real-capture.txt'),
    });
    try {
      const s = await gpuStatus(srv.url);
      expect(s).toMatchObject({
        available: true,
        device: 'cuda',
        gpu_name: 'NVIDIA H200',
        memory_total_mb: 143771,
        memory_free_mb: 143156,
        temperature_celsius: 39,
      });
      expect(s.gpus).toHaveLength(1);
      // auto with a visible GPU tries the CUDA provider: on CUDA where it loads, else CPU with the reason.
      if (s.engine.device === 'cpu')
        expect(s.engine.fallback_reason).toMatch(/CUDA execution provider not usable/);
      else expect(s.engine.fallback_reason).toBeNull();
      expect(s.engine.requested).toBe('auto');
      const r = await diagnosis(srv.url, { findings: [{ feature: 'cough' }] });
      expect(r.status).toBe(200);
    } finally {
      await srv.close();
    }
  });

  it('serves the GPU status while not ready, with the reason the engine is not loaded', async () => {
    const srv = await startReasoning({
      REASONING_KB_DIRS: '/nonexistent/kb',
      NVIDIA_SMI_PATH: fakeNvidiaSmi('l4-x2.txt'),
    });
    try {
      const s = await gpuStatus(srv.url);
      expect(s.gpus).toHaveLength(2);
      expect(s.engine).toBeNull();
      expect(s.engine_reason).toMatch(/not valid/);
    } finally {
      await srv.close();
    }
  });
});
