/**
 * The kit README's sample service (services/kit/examples/echo): the README shows its files as
 * they are, and a service built from them works, in-process over a real socket and as the built
 * process (`npx tsc -b` builds services/kit/examples/echo/dist, as `npm test` does first).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createLogger, serve } from '@clinicalsuite/kit';
import { buildEchoApp } from '../../services/kit/examples/echo/src/app.js';
import { loadEchoConfig } from '../../services/kit/examples/echo/src/config.js';
import { captureLogs, freePort, until } from './helpers.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const EXAMPLE = 'services/kit/examples/echo/src';
const MAIN = join(ROOT, 'services/kit/examples/echo/dist/main.js');
const TOKEN = 'echo-token-0123456789';

describe('the kit README', () => {
  it('shows the example files exactly as they are in the repository', () => {
    const readme = readFileSync(join(ROOT, 'services/kit/README.md'), 'utf8');
    const blocks = [
      ...readme.matchAll(/```ts\n\/\/ (services\/kit\/examples\/echo\/src\/[\w-]+\.ts)\n([\s\S]*?)```/g),
    ];
    const shown = new Map(blocks.map((m) => [m[1], m[2]]));
    expect([...shown.keys()].sort()).toEqual(
      ['app.ts', 'config.ts', 'main.ts'].map((file) => `${EXAMPLE}/${file}`),
    );
    for (const [path, text] of shown) expect(text).toBe(readFileSync(join(ROOT, path ?? ''), 'utf8'));
  });
});

describe('the example service, in-process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kit-echo-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is not ready, naming why, until its resource opens; then echoes, with a token only', async () => {
    const greetingFile = join(dir, 'greeting.txt');
    const config = loadEchoConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
      ECHO_API_TOKEN: TOKEN,
      ECHO_GREETING_FILE: greetingFile,
    });
    const { destination } = captureLogs();
    const { kit } = buildEchoApp({
      config,
      logger: createLogger({ service: 'echo', level: 'info', destination }),
    });
    const server = await serve(kit, { signals: [], exit: false });
    try {
      const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      // The file is missing: the open fails and is retried, the reason names the file.
      const notReady = await until(async () => {
        const res = await fetch(`${server.url}/readyz`);
        const body = (await res.json()) as { reason?: string };
        return body.reason?.includes('ENOENT') === true ? { status: res.status, body } : undefined;
      }, 5000);
      expect(notReady.status).toBe(503);
      expect(notReady.body.reason).toMatch(/^the greeting failed to open: .*ENOENT/);
      expect(notReady.body.reason).toContain(greetingFile);
      const health = await fetch(`${server.url}/health`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { ready: boolean }).ready).toBe(false);
      // A malformed request gets its 422 whether or not the service is ready; a good one 503.
      const invalid = await fetch(`${server.url}/echo`, {
        method: 'POST',
        headers: auth,
        body: '{"times":2}',
      });
      expect(invalid.status).toBe(422);
      const early = await fetch(`${server.url}/echo`, {
        method: 'POST',
        headers: auth,
        body: '{"text":"hi"}',
      });
      expect(early.status).toBe(503);
      expect(early.headers.get('retry-after')).not.toBeNull();

      writeFileSync(greetingFile, 'Hello there\nsecond line\n');
      await until(async () => ((await fetch(`${server.url}/readyz`)).ok ? true : undefined), 5000);

      const noToken = await fetch(`${server.url}/echo`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"text":"hi"}',
      });
      expect(noToken.status).toBe(401);
      const res = await fetch(`${server.url}/echo`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ text: 'hi', times: 2 }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ echo: 'Hello there hi hi' });

      const stream = await fetch(`${server.url}/echo/stream`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ text: 'hi' }),
      });
      expect(stream.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const events = (await stream.text())
        .split('\n\n')
        .filter((e) => e.startsWith('data: '))
        .map((e) => e.slice('data: '.length));
      expect(events).toEqual(['{"word":"Hello"}', '{"word":"there"}', '{"word":"hi"}', '[DONE]']);

      const openapi = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
        paths: Record<string, unknown>;
      };
      expect(Object.keys(openapi.paths)).toEqual(
        expect.arrayContaining(['/echo', '/echo/stream', '/health']),
      );
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toMatch(/http_requests_total\{[^}]*route="\/echo"[^}]*status="200"[^}]*\} 1/);
    } finally {
      await server.shutdown('test finished');
    }
    expect(kit.readiness.reason).toBe('shutting down');
  });
});

describe('the example service, built and run as a process', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kit-echo-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('stops on a bad variable, naming it (exit 78)', () => {
    const r = spawnSync(process.execPath, [MAIN], {
      env: { ...process.env, ECHO_API_TOKEN: 'short', PORT: '0' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(78);
    expect(r.stderr).toMatch(/ECHO_API_TOKEN/);
  });

  it('serves, then exits 0 on SIGTERM', async () => {
    const greetingFile = join(dir, 'greeting.txt');
    writeFileSync(greetingFile, 'Hi\n');
    const port = await freePort();
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        NVIDIA_SMI_PATH: '/nonexistent/nvidia-smi',
        ECHO_API_TOKEN: TOKEN,
        ECHO_GREETING_FILE: greetingFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const url = `http://127.0.0.1:${port}`;
      await until(
        () =>
          fetch(`${url}/readyz`).then(
            (r) => (r.ok ? true : undefined),
            () => undefined,
          ),
        15_000,
      );
      const res = await fetch(`${url}/echo`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'there' }),
      });
      expect(await res.json()).toEqual({ echo: 'Hi there' });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
