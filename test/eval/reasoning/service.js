// Starting the built reasoning service for the evaluation harness and the benchmark: a free
// loopback port, this process's environment passed through, /health awaited, stopped at the end.
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const SERVICE_MAIN = join(ROOT, 'services/reasoning/dist/main.js');

/** The service could not be started (not built, exited, never healthy). */
export class ServiceStartError extends Error {}

/** @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts services/reasoning/dist/main.js and waits until /health answers 200.
 * @param {{ env?: NodeJS.ProcessEnv, healthTimeoutMs?: number }} [options]
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
/**
 * The bearer token the service accepts: REASONING_API_TOKEN from the environment (a service given
 * with --url wants its own), else one made for the service this process starts.
 */
const TOKEN = process.env['REASONING_API_TOKEN'] ?? randomBytes(24).toString('base64url');

export async function startService(options = {}) {
  if (!existsSync(SERVICE_MAIN))
    throw new ServiceStartError(
      `${SERVICE_MAIN} does not exist: build the service first (npm run build), or pass --url`,
    );
  const healthTimeoutMs = options.healthTimeoutMs ?? 120_000;
  const port = await freePort();
  const env = options.env ?? process.env;
  const child = spawn(process.execPath, [SERVICE_MAIN], {
    cwd: ROOT,
    env: {
      ...env,
      REASONING_API_TOKEN: env['REASONING_API_TOKEN'] ?? TOKEN,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  /** @type {number | null} */
  let exitCode = null;
  child.on('exit', (code) => {
    exitCode = code ?? -1;
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const deadline = Date.now() + healthTimeoutMs;
  while (Date.now() < deadline) {
    if (exitCode !== null)
      throw new ServiceStartError(
        `the reasoning service exited with status ${exitCode} before it was healthy:\n${stderr}`,
      );
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return { url, stop };
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  await stop();
  throw new ServiceStartError(
    `the reasoning service was not healthy within ${healthTimeoutMs} ms:\n${stderr}`,
  );
}

/**
 * POST /api/v1/diagnosis; the parsed 200 body, or an Error naming the status and the message.
 * @param {string} url
 * @param {object} body
 * @param {number} [timeoutMs]
 */
export async function postDiagnosis(url, body, timeoutMs = 120_000) {
  const res = await fetch(`${url}/api/v1/diagnosis`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (res.status !== 200) {
    let detail = text.slice(0, 300);
    try {
      const json = JSON.parse(text);
      detail = json?.error?.message ?? json?.message ?? detail;
    } catch {
      // not JSON: keep the text
    }
    throw new Error(`HTTP ${res.status}: ${detail}`);
  }
  return JSON.parse(text);
}
