import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { freePort } from '../kit/helpers.js';
import { fakeUpstream, json, writeTestKb, type FakeUpstream } from './service-helpers.js';

// The built service as a real process (`npm test` builds services/reasoning/dist first): a bad
// variable stops it with the variable named (exit 78); SIGTERM lets the request in flight finish,
// then it exits 0.

const MAIN = new URL('../../services/reasoning/dist/main.js', import.meta.url).pathname;

describe('the reasoning service process', () => {
  let kbDir: string;
  let llm: FakeUpstream;

  beforeAll(async () => {
    kbDir = await writeTestKb();
    // A slow LLM (400 ms) that answers the findings JSON with no findings.
    llm = await fakeUpstream((_req, _body, res) => {
      setTimeout(() => {
        json(res, 200, {
          id: 'x',
          object: 'chat.completion',
          model: 'slow-model',
          choices: [
            { index: 0, message: { role: 'assistant', content: '{"findings": []}' }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
        });
      }, 400);
    });
  });
  afterAll(() => llm.close());

  it('refuses a bad variable, naming it (exit 78)', () => {
    const r = spawnSync(process.execPath, [MAIN], {
      env: { ...process.env, REASONING_DEVICE: 'gpu', PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/REASONING_DEVICE/);
  });

  it('finishes the request in flight on SIGTERM, then exits 0', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
        // What is tested here is the process, not its auth (test/security/auth.test.ts).
        AUTH_DISABLED: 'true',
        REASONING_DEVICE: 'cpu',
        REASONING_KB_DIRS: kbDir,
        LLM_URL: llm.url,
        REASONING_LLM_MODEL: 'slow-model',
        SHUTDOWN_GRACE_MS: '5000',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const url = `http://127.0.0.1:${String(port)}`;
    for (let i = 0; ; i++) {
      const status = await fetch(`${url}/health`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 200) break;
      if (child.exitCode !== null || i > 200)
        throw new Error(`the service did not become healthy: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const inFlight = fetch(`${url}/api/v1/diagnosis`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'Sốt, ho.' }),
    });
    await new Promise((r) => setTimeout(r, 150));
    child.kill('SIGTERM');
    const res = await inFlight;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: { extractor: { llm: string } } };
    expect(body.model.extractor.llm).toBe('slow-model');
    expect(await exited).toBe(0);
  });
});
