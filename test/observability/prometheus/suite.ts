/**
 * The whole suite as `npm start` runs it (the built local runner, operator/dist/local/main.js), for
 * the Prometheus test: every service that can run on this machine, on tiny or cached models, on a
 * free base port, with CLINICALSUITE_HOME in a temp dir whose models come from the machine's cache
 * (symlinked per component, never copied) and every service's GPU status read from a fake
 * nvidia-smi that prints a real H200 capture (test/fixtures/nvidia-smi/h200-real-capture.txt), so
 * the GPU gauges and panels carry real-shaped data although this machine has no GPU.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { COMPONENTS, type ComponentKey } from '../../../operator/src/api/v1alpha1/index.js';
import { ensureTinyLlamaGguf } from '../../fixtures/models/tiny-llama-gguf.js';
import { ensureTinyMtmdGguf } from '../../fixtures/models/tiny-mtmd-gguf.js';
import { fixture as gpuFixture } from '../../kit/gpu/helpers.js';
import { findLlamaServer } from '../../medllm/helpers.js';
import { freePort } from '../../kit/helpers.js';
import {
  freeBasePort,
  parseTables,
  RUNNER_MAIN,
  type TableRow,
} from '../../operator/local/runner-harness.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const CACHE_HOME = process.env['CLINICALSUITE_HOME'] ?? join(homedir(), '.cache', 'clinicalsuite');
export const GPU_FIXTURE = 'h200-real-capture.txt';
/** The labels the local scrape config gives every target, as the ServiceMonitor and prometheus-operator do on Kubernetes. */
export const NAMESPACE = 'local';
export const SUITE_NAME = 'observability';

/** A fake `nvidia-smi` printing a real capture: what the services' GPU status reads. */
export function fakeNvidiaSmi(dir: string, name = GPU_FIXTURE): string {
  const path = join(dir, 'nvidia-smi');
  writeFileSync(path, `#!/bin/sh\ncat <<'OUT'\n${gpuFixture(name).trimEnd()}\nOUT\n`);
  chmodSync(path, 0o755);
  return path;
}

export interface RunningSuite {
  readonly home: string;
  readonly basePort: number;
  /** Components that run (their process is up), by key. */
  readonly urls: ReadonlyMap<ComponentKey, string>;
  /** Components left out and why (e.g. medllm without a built llama-server). */
  readonly skipped: ReadonlyMap<ComponentKey, string>;
  readonly tokens: Readonly<Record<string, string>>;
  readonly nvidiaSmi: string;
  rows(): Map<string, TableRow>;
  output(): string;
  /** Waits for a services table in which `keys` are all ready. */
  waitReady(keys: readonly ComponentKey[], timeoutMs: number): Promise<Map<string, TableRow>>;
  /** Stops the runner (SIGTERM: every service drains) and removes the temp home. */
  stop(): Promise<void>;
}

function envList(env: Record<string, string>): { name: string; value: string }[] {
  return Object.entries(env).map(([name, value]) => ({ name, value }));
}

/** The component's models directory in the machine's cache, linked in: fetched there once, reused after. */
function linkCached(home: string, dir: string): void {
  const target = join(CACHE_HOME, 'models', dir);
  mkdirSync(target, { recursive: true });
  symlinkSync(target, join(home, 'models', dir));
}

/**
 * Starts the runner on a suite enabling every service. The text LLM (and so agent, reasoning,
 * patient simulator and task agent, which use it) loads the tests' tiny generated GGUF; medllm
 * runs the tiny multimodal model on the cached llama-server when one is built, else is left out.
 */
export async function startSuite(options: { logLevel?: string } = {}): Promise<RunningSuite> {
  const root = mkdtempSync(join(tmpdir(), 'cs-observability-'));
  const home = join(root, 'home');
  mkdirSync(join(home, 'models'), { recursive: true });
  // Cached models, shared by symlink: face detector/recognizer, code sets and embedder, Piper voice.
  for (const dir of ['face', 'codesearch', 'tts']) linkCached(home, dir);
  // The code search index built from them (cached after a first start): copied, since it is written.
  const cachedIndex = join(CACHE_HOME, 'data', 'codesearch');
  if (existsSync(cachedIndex)) cpSync(cachedIndex, join(home, 'data', 'codesearch'), { recursive: true });
  const nvidiaSmi = fakeNvidiaSmi(root);
  const tinyLlm = ensureTinyLlamaGguf();
  const skipped = new Map<ComponentKey, string>();
  const server = findLlamaServer();
  const common = { NVIDIA_SMI_PATH: nvidiaSmi, SHUTDOWN_GRACE_MS: '2000' };
  const services: Record<string, unknown> = {
    llm: {
      enabled: true,
      model: { source: `file://${tinyLlm}` },
      env: envList({ ...common, THREADS: '1', GPU: 'false', CONTEXT_SIZE: '4096' }),
    },
    // One of the agent's three LLM upstreams is down (a port nothing listens on), as when one LLM of
    // a deployment fails: its retries, cooldowns and fallbacks to the others carry real data.
    agent: {
      enabled: true,
      env: envList({
        ...common,
        // a loopback port nothing listens on (taken from the OS, then released)
        AGENT_BETA3_URL: `http://127.0.0.1:${await freePort()}`,
        AGENT_LLM_COOLDOWN_MS: '2000',
      }),
    },
    face: { enabled: true, env: envList({ ...common, FACE_DEVICE: 'cpu', FACE_THREADS: '1' }) },
    taskProxy: { enabled: true, env: envList(common) },
    reasoning: { enabled: true, env: envList({ ...common, REASONING_DEVICE: 'cpu' }) },
    taskAgent: { enabled: true, env: envList(common) },
    stt: { enabled: true, env: envList(common) },
    ocr: { enabled: true, env: envList(common) },
    tts: { enabled: true, env: envList({ ...common, TTS_THREADS: '1' }) },
    codeSearch: { enabled: true, env: envList({ ...common, CODESEARCH_THREADS: '1' }) },
    patientSim: { enabled: true, env: envList(common) },
  };
  if ('path' in server) {
    const tiny = ensureTinyMtmdGguf();
    services['medllm'] = {
      enabled: true,
      model: { source: `file://${tiny.model}`, projector: { source: `file://${tiny.mmproj}` } },
      env: envList({
        ...common,
        LLAMA_SERVER_PATH: server.path,
        CONTEXT_SIZE: '1024',
        IMAGE_TOKENS: String(tiny.imageTokens + 2),
        THREADS: '1',
        GPU_LAYERS: '0',
        LLAMA_SERVER_ARGS: '--no-warmup',
      }),
    };
  } else {
    skipped.set('medllm', `no llama-server built: ${server.reason}`);
  }
  const suiteFile = join(root, 'suite.yaml');
  writeFileSync(
    suiteFile,
    stringify({
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      metadata: { name: SUITE_NAME },
      spec: { services },
    }),
  );
  const basePort = await freeBasePort();
  const child: ChildProcess = spawn(process.execPath, [RUNNER_MAIN, suiteFile], {
    cwd: REPO,
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? root,
      CLINICALSUITE_HOME: home,
      CLINICALSUITE_BASE_PORT: String(basePort),
      CLINICALSUITE_HEALTH_INTERVAL_MS: '250',
      CLINICALSUITE_DEPENDENCY_WAIT_MS: '20000',
      CLINICALSUITE_MODEL_RETRIES: '0',
      CLINICALSUITE_STOP_TIMEOUT_MS: '5000',
      LOG_LEVEL: options.logLevel ?? 'warn',
    },
    // In the test's process group, so a Ctrl-C of the test reaches it too; its services exit with it.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const urls = new Map<ComponentKey, string>();
  for (const key of Object.keys(services) as ComponentKey[]) {
    const port = basePort + (COMPONENTS[key].port - COMPONENTS.llm.port);
    urls.set(key, `http://127.0.0.1:${port}`);
  }
  const rows = () => {
    const tables = parseTables(out);
    return new Map((tables.at(-1) ?? []).map((r) => [r.name, r]));
  };
  const pids = () => [...rows().values()].flatMap((r) => (r.pid ? [r.pid] : []));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const servicePids = pids();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000, undefined, { ref: false })]);
    }
    for (const pid of [child.pid, ...servicePids]) {
      if (pid === undefined) continue;
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // gone already
        }
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', () => {
    if (!stopped && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });
  const tokensFile = join(home, 'tokens.env');
  const readTokens = (): Record<string, string> =>
    existsSync(tokensFile)
      ? Object.fromEntries(
          readFileSync(tokensFile, 'utf8')
            .split('\n')
            .flatMap((l) => {
              const m = /^(?:export\s+)?([A-Z_]+)=['"]?([^'"]*)['"]?$/.exec(l.trim());
              return m ? [[m[1]!, m[2]!]] : [];
            }),
        )
      : {};
  const suite: RunningSuite = {
    home,
    basePort,
    urls,
    skipped,
    get tokens() {
      return readTokens();
    },
    nvidiaSmi,
    rows,
    output: () => out,
    waitReady: async (keys, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const current = rows();
        if (keys.every((k) => current.get(k)?.state === 'ready')) return current;
        if (child.exitCode !== null) throw new Error(`the runner exited (${child.exitCode}):\n${out}`);
        if (Date.now() > deadline) {
          const notReady = keys.filter((k) => current.get(k)?.state !== 'ready');
          const logs = notReady
            .map((k) => {
              const file = join(home, 'logs', `${COMPONENTS[k].dir}.log`);
              return existsSync(file)
                ? `--- ${k} log (tail)\n${readFileSync(file, 'utf8').slice(-2000)}`
                : '';
            })
            .join('\n');
          throw new Error(
            `not ready after ${timeoutMs} ms: ${notReady.join(', ')}\n${out.slice(-4000)}\n${logs}`,
          );
        }
        await sleep(250);
      }
    },
    stop,
  };
  return suite;
}
