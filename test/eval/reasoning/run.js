// The reasoning engine's evaluation harness (issue 9).
//
//   npm run eval:reasoning -- [cases.json] [--url URL] [--rules-only] [--top-k N] [--json OUT]
//
// Sends every case of a case file (default: cases/primary-care.json next to this file; any file in
// the same format works, see cases/README.md) as free text to POST /api/v1/diagnosis, one at a
// time, and prints a per-case table (expected condition, top 3 with probabilities, rank of the
// expected condition) and the summary: top-1/3/10 accuracy, Brier score, expected calibration error
// of the top-1 probability, the cases whose expected condition the loaded base cannot score (listed
// separately, never dropped), failed requests, and the model and knowledge-base versions.
//
// Without --url it starts services/reasoning/dist/main.js (build first: `npm run build`) on a free
// loopback port with this process's environment (LLM_URL, REASONING_* ...) and stops it at the end.
// --rules-only sends use_llm: false (the rule pass alone). --json writes the outcomes and summary.
// Exit status: 0 when every case got a response, 1 when some request failed, 2 on bad usage or when
// the service cannot be started.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CaseFileError,
  failedOutcome,
  formatCaseTable,
  formatSummary,
  loadCaseFile,
  scoreResponse,
  summarize,
} from './lib.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../../..');
const SERVICE_MAIN = join(root, 'services/reasoning/dist/main.js');
const DEFAULT_CASES = join(here, 'cases/primary-care.json');
const HEALTH_TIMEOUT_MS = Number(process.env['EVAL_HEALTH_TIMEOUT_MS'] ?? 120_000);
const REQUEST_TIMEOUT_MS = Number(process.env['EVAL_REQUEST_TIMEOUT_MS'] ?? 120_000);

class UsageError extends Error {}

/** @param {string[]} argv */
function parseArgs(argv) {
  /** @type {{ cases: string, url: string | null, rulesOnly: boolean, topK: number, json: string | null }} */
  const options = { cases: DEFAULT_CASES, url: null, rulesOnly: false, topK: 50, json: null };
  let positional = 0;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    const value = () => {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${arg} needs a value`);
      i += 1;
      return v;
    };
    if (arg === '--url') options.url = value().replace(/\/+$/, '');
    else if (arg === '--rules-only') options.rulesOnly = true;
    else if (arg === '--json') options.json = value();
    else if (arg === '--top-k') {
      const k = Number(value());
      if (!Number.isInteger(k) || k < 1 || k > 50)
        throw new UsageError('--top-k must be an integer from 1 to 50');
      options.topK = k;
    } else if (arg === '--help' || arg === '-h') throw new UsageError('');
    else if (arg.startsWith('--')) throw new UsageError(`unknown option ${arg}`);
    else if (positional++ === 0) options.cases = resolve(arg);
    else throw new UsageError(`unexpected argument ${arg}`);
  }
  return options;
}

/** @returns {Promise<number>} */
function freePort() {
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
 * Starts the built service and waits for /health.
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
async function startService() {
  if (!existsSync(SERVICE_MAIN))
    throw new UsageError(
      `${SERVICE_MAIN} does not exist: build the service first (npm run build), or pass --url`,
    );
  const port = await freePort();
  const child = spawn(process.execPath, [SERVICE_MAIN], {
    cwd: root,
    env: { ...process.env, PORT: String(port), HOST: process.env['HOST'] ?? '127.0.0.1' },
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
  const deadline = Date.now() + HEALTH_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exitCode !== null)
      throw new UsageError(
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
  throw new UsageError(`the reasoning service was not healthy within ${HEALTH_TIMEOUT_MS} ms:\n${stderr}`);
}

/**
 * @param {string} url
 * @param {import('./lib.js').EvalCase} evalCase
 * @param {{ rulesOnly: boolean, topK: number }} options
 */
async function diagnose(url, evalCase, options) {
  const body = {
    text: evalCase.text,
    top_k: options.topK,
    next_findings: 0,
    ...(options.rulesOnly ? { use_llm: false } : {}),
  };
  const res = await fetch(`${url}/api/v1/diagnosis`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(process.env['API_TOKEN'] ? { authorization: `Bearer ${process.env['API_TOKEN']}` } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
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

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const file = await loadCaseFile(options.cases);
  const service = options.url === null ? await startService() : { url: options.url, stop: async () => {} };
  console.log(
    `evaluating ${file.cases.length} cases from ${options.cases} against ${service.url}` +
      (options.rulesOnly ? ' (rules only)' : ''),
  );
  /** @type {import('./lib.js').CaseOutcome[]} */
  const outcomes = [];
  try {
    for (const evalCase of file.cases) {
      try {
        outcomes.push(scoreResponse(evalCase, await diagnose(service.url, evalCase, options), options.topK));
      } catch (error) {
        outcomes.push(failedOutcome(evalCase, error instanceof Error ? error.message : String(error)));
      }
    }
  } finally {
    await service.stop();
  }
  const summary = summarize(outcomes);
  console.log('');
  console.log(formatCaseTable(outcomes));
  console.log('');
  console.log(formatSummary(summary));
  if (options.json !== null) {
    await writeFile(
      options.json,
      JSON.stringify(
        { cases: options.cases, url: service.url, rulesOnly: options.rulesOnly, outcomes, summary },
        null,
        2,
      ),
    );
    console.log(`wrote ${options.json}`);
  }
  return summary.failed.length > 0 ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    if (error instanceof UsageError) {
      if (error.message !== '') console.error(`eval:reasoning: ${error.message}`);
      console.error(
        'usage: npm run eval:reasoning -- [cases.json] [--url URL] [--rules-only] [--top-k N] [--json OUT]',
      );
    } else if (error instanceof CaseFileError) console.error(error.message);
    else console.error(error);
    process.exitCode = 2;
  },
);
