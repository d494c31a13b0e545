/**
 * Schemathesis (PyPI; installed outside the clone by test/fuzz/install.sh) against the OpenAPI
 * document of every one of the twelve services, on the running suite: the built local runner
 * starts them as processes on their built entries (services/<dir>/dist), wired to each other,
 * with bearer auth on in every one, real models where one needs a model to be ready (the base
 * Gemma 3 270M for the text LLM, the face, voice and code-search models, llama.cpp's llama-server
 * on the tiny generated multimodal model for medllm), every dependency up. Then, service after
 * service, `schemathesis run <url>/openapi.json` with a token, and the test fails on any answer
 * that is a 5xx, any request that got no answer, any answer its document does not describe, and a
 * service that crashed (the runner restarted it) during its fuzz.
 *
 * The checks, and why these:
 * - not_a_server_error: no 5xx, whatever was sent (every dependency is up, so no 502/503 is due);
 * - status_code_conformance: every status is one the document lists for the operation;
 * - content_type_conformance: the answer's media type is one documented for that status;
 * - response_schema_conformance: the body (each event of a stream too) matches its schema;
 * - ignored_auth: an operation the document says needs a token refuses a request without one or
 *   with a wrong one (401), so no route is open by mistake.
 * Left out: negative_data_rejection and positive_data_acceptance judge how strict validation is
 * against the schema (zod drops unknown keys without refusing them), not whether an answer is
 * right; the stateful phase, to keep the run within its time (FUZZ_PHASES adds it).
 *
 * Bounds, for a whole run of about 8 minutes on two cores: FUZZ_EXAMPLES generated cases per
 * operation (default 10) besides schemathesis's coverage cases, one request at a time, a request
 * timeout of FUZZ_REQUEST_TIMEOUT_S (60 s); operations whose work is an LLM generation get
 * FUZZ_LLM_EXAMPLES (default 2) generated cases and only the invalid ones of the coverage phase,
 * and ask for at most 16 tokens (hooks.py). The suite itself is configured for a CPU: the callers
 * of the LLM generate at most 16 tokens per call (AGENT_MAX_TOKENS, PATIENT_SIM_MAX_TOKENS,
 * REASONING_LLM_MAX_TOKENS, TASK_AGENT_CHAT_MAX_TOKENS) and the task agent runs no workers (its
 * API is fuzzed; tasks it stores are run by test/task-agent and the default suite's test), so no
 * background generation competes with the fuzz. FUZZ_SEED (default fixed) makes a run repeatable;
 * FUZZ_CHECKS and FUZZ_PHASES widen one by hand (e.g. ignored_auth, the stateful phase).
 *
 * One token with scope `*` in one tokens file (AUTH_TOKENS_FILE of every service), and the same
 * value as every token the runner hands out, so each service accepts it and each caller presents
 * it; the agent's sub-service URLs carry it too. The task proxy signs users in: its fuzz runs with
 * a session cookie, and its sign-out routes run last, apart, so they do not end that session.
 *
 * Reported per service: the operations, the cases schemathesis sent, the seconds it took.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { stringify as toYaml } from 'yaml';
import { MODEL_MANIFEST } from '@clinicalsuite/kit/models';
import {
  COMPONENT_KEYS,
  COMPONENTS,
  TOKEN_ENV_NAMES,
  type ComponentKey,
} from '../../operator/src/api/v1alpha1/index.js';
import { ensureTinyMtmdGguf } from '../fixtures/models/tiny-mtmd-gguf.js';
import { CACHE_HOME, describeReal, missingModel, realModelPath } from '../fixtures/real-component.js';
import {
  assertRunnerBuilt,
  freeBasePort,
  parseTables,
  RUNNER_MAIN,
  waitUntilDead,
  type TableRow,
} from '../operator/local/runner-harness.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const HERE = fileURLToPath(new URL('.', import.meta.url));
const READY_WITHIN_MS = 5 * 60_000;
const FUZZ_EXAMPLES = Number(process.env['FUZZ_EXAMPLES'] ?? 10);
const FUZZ_LLM_EXAMPLES = Number(process.env['FUZZ_LLM_EXAMPLES'] ?? 2);
const REQUEST_TIMEOUT_S = Number(process.env['FUZZ_REQUEST_TIMEOUT_S'] ?? 60);
const SEED = process.env['FUZZ_SEED'] ?? '20261207';
/** What the LLM's callers and the hooks ask for at most per generation. */
const MAX_TOKENS = 16;
/** The longest one service's fuzz may take before the test gives up on it. */
const PER_SERVICE_MS = 6 * 60_000;
/** FUZZ_CHECKS and FUZZ_PHASES (comma-separated, schemathesis's names) widen a run by hand. */
const CHECKS = (
  process.env['FUZZ_CHECKS'] ??
  'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,ignored_auth'
).split(',');
const PHASES = process.env['FUZZ_PHASES'] ?? 'examples,coverage,fuzzing';
const LLM_BASE = MODEL_MANIFEST['llm-base']!;

/**
 * The operations whose work is a generation on the CPU LLM (an LLM call per valid request): few
 * generated cases, and only the coverage phase's invalid ones, which are refused before any LLM.
 */
const LLM_OPERATIONS: Partial<Record<ComponentKey, readonly string[]>> = {
  llm: ['POST /chat', 'POST /v1/chat/completions'],
  agent: [
    'POST /run',
    'POST /chat',
    'POST /analyze',
    'POST /code',
    'POST /debug',
    'POST /translate',
    'POST /summarize',
    'POST /run/multipart',
    'POST /v1/chat/completions',
    'POST /chat/raw',
    'POST /patient',
    'POST /pipeline/audio-to-diagnosis',
    'POST /pipeline/audio-full-consult',
    'POST /pipeline/image-to-codes',
    'POST /pipeline/image-full-analysis',
  ],
  reasoning: ['POST /api/v1/diagnosis'],
  taskAgent: ['POST /api/v1/chat', 'POST /v1/chat/completions'],
  taskProxy: ['POST /api/agent_proxy.php'],
  patientSim: ['POST /patient'],
};

function schemathesisBinary(): { path: string } | { reason: string } {
  try {
    const out = execFileSync('bash', [join(HERE, 'install.sh'), '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { path: out.trim().split('\n').at(-1)! };
  } catch (error) {
    return { reason: (error as { stderr?: string }).stderr?.trim() || String(error) };
  }
}

function llamaServerBinary(): { path: string } | { reason: string } {
  const script = join(REPO, 'services', 'medllm', 'scripts', 'build-llama-server.sh');
  try {
    const out = execFileSync('bash', [script, '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return { path: out.trim().split('\n').at(-1)! };
  } catch (error) {
    return { reason: (error as { stderr?: string }).stderr?.trim() || String(error) };
  }
}

const schemathesis = schemathesisBinary();
const llamaServer = llamaServerBinary();
const missing =
  ('reason' in schemathesis ? schemathesis.reason : null) ??
  ('reason' in llamaServer ? `llama-server (medllm's backend): ${llamaServer.reason}` : null) ??
  missingModel(realModelPath(...LLM_BASE.file.split('/')), 'llm-base');

/** What one schemathesis run reported (its JSON report). */
interface RunReport {
  readonly exit_code: number;
  readonly running_time: number;
  readonly operations: { readonly selected: number; readonly tested: number };
  readonly test_cases: {
    readonly generated: number;
    readonly with_failures: number;
    readonly errored: number;
  };
  readonly failures: readonly unknown[];
  readonly errors: readonly unknown[];
}

interface ServiceResult {
  readonly key: ComponentKey;
  readonly operations: number;
  readonly cases: number;
  readonly seconds: number;
  readonly ok: boolean;
}

/** A TOML string (JSON's escapes are TOML's for the characters these values hold). */
const tomlString = (s: string): string => JSON.stringify(s);
const tomlList = (xs: readonly string[]): string => `[${xs.map(tomlString).join(', ')}]`;

/**
 * Schemathesis's configuration for one service: the token for its documents' `bearer` scheme
 * (taken from the environment; as the scheme's credential, schemathesis leaves it out where it
 * checks that a route refuses a request without one), model names to try, the LLM operations'
 * bounds.
 */
function configFor(key: ComponentKey, models: readonly string[], bearer: boolean): string {
  const lines: string[] = bearer ? ['[auth.openapi.bearer]', 'bearer = "${FUZZ_TOKEN}"', ''] : [];
  if (models.length > 0) {
    // A model name the service serves, most of the time: other names are refused (404/400), and
    // a fuzz that never names one never reaches the generation.
    lines.push('[dictionaries.models]', `values = ${tomlList(models)}`, '');
    lines.push('[parameters]', `"body.model" = { dictionary = "models", probability = 0.9 }`, '');
  }
  const slow = LLM_OPERATIONS[key] ?? [];
  if (slow.length > 0) {
    lines.push(
      '[[operations]]',
      `include-name = ${tomlList(slow)}`,
      `generation.max-examples = ${FUZZ_LLM_EXAMPLES}`,
      'phases.coverage.generation.mode = "negative"',
      '',
    );
  }
  return lines.join('\n');
}

describeReal(missing, 'schemathesis against the OpenAPI document of every service', () => {
  let root = '';
  let home = '';
  let reports = '';
  let child: ChildProcess | undefined;
  let out = '';
  let exited: Promise<unknown> = Promise.resolve();
  const token = `fuzz-${randomBytes(24).toString('base64url')}`;
  const password = randomBytes(24).toString('base64url');
  const urls = new Map<ComponentKey, string>();
  const results: ServiceResult[] = [];
  /** schemathesis processes still running (killed in afterAll if a test gave up on one). */
  const fuzzing = new Set<ChildProcess>();
  const started = Date.now();
  let proxyCookie = '';
  const lastTable = (): Map<string, TableRow> =>
    new Map((parseTables(out).at(-1) ?? []).map((r) => [r.name, r]));

  beforeAll(async () => {
    assertRunnerBuilt();
    root = mkdtempSync(join(tmpdir(), 'cs-fuzz-'));
    home = join(root, 'home');
    reports = join(root, 'reports');
    mkdirSync(join(home, 'data'), { recursive: true });
    mkdirSync(reports);
    // Models and the code search's imported sets come from the machine's cache, linked.
    mkdirSync(join(CACHE_HOME, 'models'), { recursive: true });
    symlinkSync(join(CACHE_HOME, 'models'), join(home, 'models'));
    mkdirSync(join(CACHE_HOME, 'data', 'codesearch'), { recursive: true });
    symlinkSync(join(CACHE_HOME, 'data', 'codesearch'), join(home, 'data', 'codesearch'));
    const tokensFile = join(root, 'tokens');
    writeFileSync(tokensFile, `# the fuzz's one token, for every service\n${token} *\n`, { mode: 0o600 });

    const basePort = await freeBasePort();
    const urlOf = (key: ComponentKey, credentials = false) =>
      `http://${credentials ? `fuzz:${token}@` : ''}127.0.0.1:${basePort + COMPONENTS[key].port - COMPONENTS.llm.port}`;
    for (const key of COMPONENT_KEYS) urls.set(key, urlOf(key));
    const env = (extra: Record<string, string> = {}) =>
      Object.entries({ AUTH_TOKENS_FILE: tokensFile, ...extra }).map(([name, value]) => ({ name, value }));
    const tiny = ensureTinyMtmdGguf();
    const services: Record<string, unknown> = Object.fromEntries(
      COMPONENT_KEYS.map((key) => [key, { enabled: true, env: env() }]),
    );
    services['llm'] = {
      enabled: true,
      env: env(),
      model: { file: LLM_BASE.file.split('/').slice(1).join('/') },
    };
    services['agent'] = {
      enabled: true,
      env: env({
        AGENT_MAX_TOKENS: String(MAX_TOKENS),
        // The agent presents a token to its sub-services from their URLs (user:token@host).
        ...Object.fromEntries(
          COMPONENTS.agent.dependsOn
            .filter((dep) => dep !== 'llm')
            .map((dep) => [COMPONENTS[dep].urlEnv, urlOf(dep, true)]),
        ),
      }),
    };
    services['medllm'] = {
      enabled: true,
      env: env({
        LLAMA_SERVER_PATH: (llamaServer as { path: string }).path,
        MODEL_PATH: tiny.model,
        MMPROJ_PATH: tiny.mmproj,
        THREADS: '1',
      }),
    };
    services['patientSim'] = { enabled: true, env: env({ PATIENT_SIM_MAX_TOKENS: String(MAX_TOKENS) }) };
    services['reasoning'] = { enabled: true, env: env({ REASONING_LLM_MAX_TOKENS: String(MAX_TOKENS) }) };
    services['taskAgent'] = {
      enabled: true,
      env: env({ TASK_AGENT_WORKERS: '0', TASK_AGENT_CHAT_MAX_TOKENS: String(MAX_TOKENS) }),
    };
    const suiteFile = join(root, 'suite.yaml');
    writeFileSync(
      suiteFile,
      toYaml({
        apiVersion: 'clinicalsuite.ai/v1alpha1',
        kind: 'ClinicalSuite',
        metadata: { name: 'fuzz' },
        spec: { services },
      }),
    );
    const runner = spawn(process.execPath, [RUNNER_MAIN, suiteFile], {
      cwd: REPO,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: process.env['HOME'] ?? root,
        CLINICALSUITE_HOME: home,
        CLINICALSUITE_BASE_PORT: String(basePort),
        CLINICALSUITE_MODEL_RETRIES: '0',
        // Every token the runner hands out is the fuzz's one.
        ...Object.fromEntries(TOKEN_ENV_NAMES.map((name) => [name, token])),
        TASK_PROXY_USER: 'fuzz',
        TASK_PROXY_PASSWORD: password,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = runner;
    runner.stdout.on('data', (c: Buffer) => (out += c.toString()));
    runner.stderr.on('data', (c: Buffer) => (out += c.toString()));
    exited = new Promise((resolve) => runner.once('exit', resolve));
    while (!COMPONENT_KEYS.every((key) => lastTable().get(key)?.state === 'ready')) {
      if (Date.now() - started > READY_WITHIN_MS || runner.exitCode !== null)
        throw new Error(`not every service was ready after ${READY_WITHIN_MS / 1000} s:\n${out}`);
      await sleep(500);
    }
    console.log(
      `all ${COMPONENT_KEYS.length} services ready ${Math.round((Date.now() - started) / 1000)} s after start`,
    );

    const login = await fetch(`${urls.get('taskProxy')!}/login.php`, {
      method: 'POST',
      body: new URLSearchParams({ username: 'fuzz', password }),
      redirect: 'manual',
    });
    proxyCookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!;
    if (!proxyCookie.includes('='))
      throw new Error(`the task proxy's sign-in gave no session (${login.status})`);
  }, READY_WITHIN_MS + 60_000);

  afterAll(async () => {
    for (const proc of fuzzing) proc.kill('SIGKILL');
    const rows = [...lastTable().values()];
    const pids = rows.flatMap((r) => (r.pid === null ? [] : [r.pid]));
    if (child !== undefined && child.exitCode === null) child.kill('SIGINT');
    await Promise.race([exited, sleep(60_000, 'timeout', { ref: false })]);
    for (const pid of [child?.pid, ...(await waitUntilDead(pids, 10_000))]) {
      try {
        if (pid !== undefined) process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    if (results.length > 0) {
      const total = results.reduce((n, r) => n + r.cases, 0);
      const lines = results.map(
        (r) =>
          `  ${r.key.padEnd(11)} ${String(r.operations).padStart(3)} operations ${String(r.cases).padStart(6)} cases ` +
          `${String(Math.round(r.seconds)).padStart(4)} s ${r.ok ? 'ok' : 'FAILED'}`,
      );
      console.log(
        [
          `schemathesis: ${total} cases against ${results.length} services, whole test ${Math.round((Date.now() - started) / 1000)} s`,
          ...lines,
        ].join('\n'),
      );
    }
    if (root !== '') rmSync(root, { recursive: true, force: true });
  }, 120_000);

  /** The lines the service logged at error level or above since the fuzz began (no request data). */
  function errorLines(key: ComponentKey): string[] {
    const file = join(home, 'logs', `${COMPONENTS[key].dir}.log`);
    if (!existsSync(file)) return [];
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line))
      .slice(-10)
      .map((line) => line.slice(0, 600));
  }

  /** Runs schemathesis once; resolves with its report and what it printed. */
  async function runSchemathesis(
    key: ComponentKey,
    name: string,
    headers: Record<string, string>,
    extra: readonly string[],
    models: readonly string[],
    bearer: boolean,
    deadline: number,
  ): Promise<{ report: RunReport; printed: string }> {
    const config = join(root, `${name}.toml`);
    writeFileSync(config, configFor(key, models, bearer));
    const reportFile = join(reports, `${name}.json`);
    const args = [
      '--config-file',
      config,
      'run',
      `${urls.get(key)!}/openapi.json`,
      '--checks',
      CHECKS.join(','),
      '--phases',
      PHASES,
      '--max-examples',
      String(FUZZ_EXAMPLES),
      '--workers',
      '1',
      '--request-timeout',
      String(REQUEST_TIMEOUT_S),
      '--seed',
      SEED,
      '--generation-database',
      'none',
      '--suppress-health-check',
      'all',
      '--report',
      'json',
      '--report-json-path',
      reportFile,
      '--no-color',
      ...Object.entries(headers).flatMap(([h, v]) => ['--header', `${h}: ${v}`]),
      ...extra,
    ];
    const proc = spawn((schemathesis as { path: string }).path, args, {
      // Its own working directory: schemathesis writes nothing into the clone.
      cwd: root,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: process.env['HOME'] ?? root,
        SCHEMATHESIS_HOOKS: join(HERE, 'hooks.py'),
        FUZZ_MAX_TOKENS: String(MAX_TOKENS),
        FUZZ_TOKEN: token,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    fuzzing.add(proc);
    proc.once('exit', () => fuzzing.delete(proc));
    let printed = '';
    proc.stdout.on('data', (c: Buffer) => (printed += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (printed += c.toString()));
    // Past the time it has left, it is stopped (and its requests with it) before jest gives up on
    // the test, so that no fuzz outlives its test.
    const timer = setTimeout(() => proc.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
    await new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    clearTimeout(timer);
    if (proc.signalCode === 'SIGKILL')
      throw new Error(`schemathesis did not finish with ${key} in time:\n${findings(printed)}`);
    const text = existsSync(reportFile) ? readFileSync(reportFile, 'utf8') : '';
    if (text === '')
      throw new Error(
        `schemathesis (exit ${String(proc.exitCode ?? proc.signalCode)}) wrote no report for ${key}:\n${printed.slice(-20_000)}`,
      );
    return { report: JSON.parse(text) as RunReport, printed };
  }

  /** What schemathesis said about the problems it found: from its first ERRORS or FAILURES section on. */
  function findings(printed: string): string {
    const at = printed.search(/^=+ (ERRORS|FAILURES) =+$/m);
    return (at >= 0 ? printed.slice(at) : printed).slice(0, 20_000);
  }

  /** The model names the service lists on /v1/models, when it has that route. */
  async function modelsOf(key: ComponentKey): Promise<string[]> {
    const res = await fetch(`${urls.get(key)!}/v1/models`, { headers: { authorization: `Bearer ${token}` } });
    if (!res.ok) return [];
    const body = (await res.json()) as { data?: { id?: unknown }[] };
    return (body.data ?? []).flatMap((m) => (typeof m.id === 'string' ? [m.id] : []));
  }

  it.each(COMPONENT_KEYS.map((key) => [key]))(
    '%s: no 5xx, no request left unanswered, every answer as its OpenAPI document says',
    async (key) => {
      const began = Date.now();
      const models = await modelsOf(key);
      const document = (await (await fetch(`${urls.get(key)!}/openapi.json`)).json()) as {
        components?: { securitySchemes?: Record<string, unknown> };
      };
      const bearer = document.components?.securitySchemes?.['bearer'] !== undefined;
      const runs: { name: string; headers: Record<string, string>; extra: string[] }[] =
        key === 'taskProxy'
          ? [
              // Signed in (the session cookie), from the proxy's own origin as its pages post; the
              // sign-out routes last, so that they end the session only when nothing else needs it.
              {
                name: 'taskProxy',
                headers: { cookie: proxyCookie, origin: urls.get(key)! },
                extra: ['--exclude-path', '/logout.php'],
              },
              {
                name: 'taskProxy-logout',
                headers: { cookie: proxyCookie, origin: urls.get(key)! },
                extra: ['--include-path', '/logout.php'],
              },
            ]
          : [{ name: key, headers: {}, extra: [] }];
      let cases = 0;
      let operations = 0;
      const problems: string[] = [];
      for (const run of runs) {
        const { report, printed } = await runSchemathesis(
          key,
          run.name,
          run.headers,
          run.extra,
          models,
          bearer,
          began + PER_SERVICE_MS - 15_000,
        );
        cases += report.test_cases.generated;
        operations += report.operations.selected;
        if (report.exit_code !== 0 || report.failures.length > 0 || report.errors.length > 0)
          problems.push(findings(printed));
      }
      // A crash shows as a restart in the runner's table (or the service not ready any more).
      const row = lastTable().get(key);
      if (row?.restarts !== 0 || row.state !== 'ready')
        problems.push(
          `${key} is ${row?.state ?? 'gone'} after its fuzz, restarted ${row?.restarts ?? '?'} times`,
        );
      const ok = problems.length === 0;
      results.push({ key, operations, cases, seconds: (Date.now() - began) / 1000, ok });
      if (!ok) {
        const logged = errorLines(key);
        throw new Error(
          `schemathesis found problems in ${key} (seed ${SEED}):\n${problems.join('\n')}` +
            (logged.length > 0 ? `\n${key}'s error log lines:\n${logged.join('\n')}` : ''),
        );
      }
      expect(cases).toBeGreaterThan(operations);
    },
    PER_SERVICE_MS,
  );
});
