// The local runner with services built on the real service kit (test/fixtures/services/kit-service.mjs):
// the kit's /readyz reasons reach the runner's table, SIGINT drains them, and a runner killed with
// SIGKILL leaves no service behind (EXIT_WITH_PARENT).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import {
  allReady,
  assertRunnerBuilt,
  row,
  startRunner,
  waitUntilDead,
  type Harness,
} from './runner-harness.js';

const harnesses: Harness[] = [];
beforeAll(() => assertRunnerBuilt());
afterEach(() => {
  for (const h of harnesses.splice(0)) h.cleanup();
});

describe('local runner with kit services', () => {
  it('shows a kit service not ready with the model it needs, then ready once the file is there', async () => {
    const h = await startRunner({
      dirs: ['tts', 'ocr'],
      kitDirs: ['tts', 'ocr'],
      services: {
        ocr: { enabled: true },
        tts: { enabled: true, model: { source: 'file:///nonexistent/voice.onnx' } },
      },
    });
    harnesses.push(h);
    const modelPath = join(h.home, 'models', 'tts', 'voice.onnx');
    const table = await h.waitForTable(
      (rows) => rows.get('tts')?.state === 'not-ready' && allReady(['ocr'])(rows),
      20_000,
    );
    expect(row(table, 'tts').detail).toBe(`model file not found: ${modelPath} — place the model file there`);
    expect(row(table, 'ocr').url).toBe(`http://127.0.0.1:${h.basePort + 11}`);
    const whoami = (await (await fetch(`${row(table, 'ocr').url}/whoami`)).json()) as { pid: number };
    expect(whoami.pid).toBe(row(table, 'ocr').pid);

    mkdirSync(dirname(modelPath), { recursive: true });
    writeFileSync(modelPath, 'ONNX');
    await h.waitForTable(allReady(['tts', 'ocr']), 10_000);

    h.child.kill('SIGINT');
    expect(await h.exited).toEqual({ code: 0, signal: null });
    expect(await waitUntilDead([row(table, 'tts').pid!, row(table, 'ocr').pid!])).toEqual([]);
  });

  it('leaves no service behind when the runner itself is killed with SIGKILL', async () => {
    const h = await startRunner({ dirs: ['ocr'], kitDirs: ['ocr'], services: { ocr: { enabled: true } } });
    harnesses.push(h);
    const table = await h.waitForTable(allReady(['ocr']), 20_000);
    h.child.kill('SIGKILL');
    await h.exited;
    expect(await waitUntilDead([row(table, 'ocr').pid!], 5000)).toEqual([]);
  });
});
