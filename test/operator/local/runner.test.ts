// The local runner as a user runs it: the built `operator/dist/local/main.js` as a process,
// real fixture services (test/fixtures/services/fixture-service.mjs) on loopback ports.
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  allReady,
  eventsEnv,
  assertRunnerBuilt,
  row,
  startRunner,
  waitUntilDead,
  type Harness,
} from './runner-harness.js';
import { parseTokensFile } from '../../../operator/src/local/tokens.js';

const harnesses: Harness[] = [];

// stt's catalogue row names a Whisper model: these runs give it a local file:// source instead, so
// the runner copies a few bytes rather than fetching the real one (the fixture service never reads it).
const sttWeights = join(mkdtempSync(join(tmpdir(), 'cs-runner-model-')), 'ggml-test.bin');
writeFileSync(sttWeights, 'not a model');
const sttModel = { source: `file://${sttWeights}` };
async function run(options: Parameters<typeof startRunner>[0]): Promise<Harness> {
  const h = await startRunner(options);
  harnesses.push(h);
  return h;
}

beforeAll(() => assertRunnerBuilt());
afterEach(() => {
  for (const h of harnesses.splice(0)) h.cleanup();
});

describe('local runner (real processes)', () => {
  it('starts in dependency order, restarts a killed service with backoff, stops everything on SIGINT', async () => {
    const h = await run({
      dirs: ['stt', 'ocr', 'patient-sim'],
      // Dependency order is the reverse of catalogue order and patientSim is slow to listen: a
      // runner that did not wait for dependencies would start stt and ocr first.
      services: ({ eventsFile }) => ({
        stt: { enabled: true, model: sttModel, dependsOn: ['ocr'], env: [eventsEnv(eventsFile)] },
        ocr: { enabled: true, dependsOn: ['patientSim'], env: [eventsEnv(eventsFile)] },
        patientSim: {
          enabled: true,
          env: [eventsEnv(eventsFile), { name: 'FIXTURE_LISTEN_DELAY_MS', value: '700' }],
        },
      }),
    });

    const first = await h.waitForTable(allReady(['stt', 'ocr', 'patientSim']));
    expect([...first.keys()]).toEqual(['patientSim', 'ocr', 'stt']);
    expect(row(first, 'patientSim').url).toBe(`http://127.0.0.1:${h.basePort + 14}`);
    expect(row(first, 'stt').url).toBe(`http://127.0.0.1:${h.basePort + 10}`);
    expect(h.events().map((e) => `${e.component} ${e.event}`)).toEqual([
      'patient-sim started',
      'ocr started',
      'stt started',
    ]);
    expect(h.stdout()).toContain(
      `tokens: API_TOKEN, AI_AGENT_API_TOKEN, FACE_API_TOKEN, MEDLLM_API_TOKEN, REASONING_API_TOKEN, ` +
        `TASK_AGENT_API_TOKEN, STT_API_TOKEN, OCR_API_TOKEN, TTS_API_TOKEN, CODE_SEARCH_API_TOKEN, ` +
        `PATIENT_SIM_API_TOKEN in ${join(h.home, 'tokens.env')}`,
    );
    expect(h.stdout()).not.toContain('TASK_PROXY_PASSWORD'); // no task proxy, no sign-in user
    expect(h.stdout()).toContain('Ctrl-C to stop');

    // What a service gets: the contract's variables, its upstream's URL and token, its own token,
    // the spec's env; no leaks (no token of a service it does not call).
    const env = JSON.parse(readFileSync(join(h.home, 'data', 'stt', 'env.json'), 'utf8')) as Record<
      string,
      string
    >;
    expect(env).toMatchObject({
      PORT: String(h.basePort + 10),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      CLINICALSUITE_HOME: h.home,
      MODELS_DIR: join(h.home, 'models'),
      DATA_DIR: join(h.home, 'data', 'stt'),
      MAX_CONCURRENCY: '2',
      OCR_URL: `http://127.0.0.1:${h.basePort + 11}`,
      MODEL_PATH: join(h.home, 'models', 'stt', 'ggml-test.bin'),
      FIXTURE_EVENTS_FILE: h.eventsFile,
    });
    expect(env).not.toHaveProperty('LEAK_CANARY');
    expect(env).not.toHaveProperty('API_TOKEN');
    expect(Object.keys(env).sort()).toEqual(
      [
        'PATH',
        'HOME',
        'PORT',
        'HOST',
        'LOG_LEVEL',
        'CLINICALSUITE_HOME',
        'EXIT_WITH_PARENT',
        'MODELS_DIR',
        'MODEL_PATH',
        'DATA_DIR',
        'MAX_CONCURRENCY',
        'OCR_URL',
        'OCR_API_TOKEN',
        'STT_API_TOKEN',
        'FIXTURE_EVENTS_FILE',
      ].sort(),
    );
    expect(readFileSync(join(h.home, 'logs', 'stt.log'), 'utf8')).toContain('stt listening on 127.0.0.1');

    // Killed: restarted after 200 ms, then after 400 ms the second time (exponential backoff).
    const firstPid = row(first, 'ocr').pid!;
    process.kill(firstPid, 'SIGKILL');
    const restarting = await h.waitForTable(
      (rows) => rows.get('ocr')?.state.startsWith('restarting') === true,
    );
    expect(row(restarting, 'ocr').state).toBe('restarting in 200ms (signal SIGKILL)');
    const back = await h.waitForTable(
      (rows) => rows.get('ocr')?.state === 'ready' && rows.get('ocr')?.restarts === 1,
    );
    const secondPid = row(back, 'ocr').pid!;
    expect(secondPid).not.toBe(firstPid);
    process.kill(secondPid, 'SIGKILL');
    await h.waitForTable((rows) => rows.get('ocr')?.state === 'restarting in 400ms (signal SIGKILL)');
    const third = await h.waitForTable(
      (rows) => rows.get('ocr')?.state === 'ready' && rows.get('ocr')?.restarts === 2,
    );
    expect(row(third, 'stt').restarts).toBe(0);

    // SIGINT: dependents first, each gets SIGTERM and exits 0; the runner exits 0; nothing is left.
    const pids = h.events().map((e) => e.pid);
    h.child.kill('SIGINT');
    expect(await h.exited).toEqual({ code: 0, signal: null });
    const stops = h
      .stdout()
      .split('\n')
      .filter((l) => / stopped \(/.test(l));
    expect(stops).toEqual([
      '[stt] stopped (exit code 0)',
      '[ocr] stopped (exit code 0)',
      '[patientSim] stopped (exit code 0)',
    ]);
    expect(h.stdout()).toContain('stopped 3 service(s)');
    expect(await waitUntilDead(pids)).toEqual([]);
  });

  it('gives the task proxy the agent’s URL, token and SQLite file, and a first user kept in tokens.env', async () => {
    const h = await run({
      dirs: ['task-agent', 'task-proxy'],
      services: {
        // A misspelt setting: the runner warns and starts the service as it is.
        taskAgent: { enabled: true, env: [{ name: 'TASK_AGENT_RETENTION_DAY', value: '30' }] },
        taskProxy: { enabled: true },
      },
      env: { TASK_PROXY_USER: 'clinician' },
    });
    await h.waitForTable(allReady(['taskAgent', 'taskProxy']));
    expect(h.stderr()).toContain(
      'warning: taskAgent: env TASK_AGENT_RETENTION_DAY is read by nothing in the taskAgent service, so it ' +
        'changes nothing; did you mean TASK_AGENT_RETENTION_DAYS?',
    );
    const tokensFile = join(h.home, 'tokens.env');
    const stored = parseTokensFile(readFileSync(tokensFile, 'utf8'));
    const password = stored.get('TASK_PROXY_PASSWORD') ?? '';
    expect(password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(stored.has('TASK_PROXY_USER')).toBe(false); // from the runner's environment
    const envOf = (dir: string) =>
      JSON.parse(readFileSync(join(h.home, 'data', dir, 'env.json'), 'utf8')) as Record<string, string>;
    const proxy = envOf('task-proxy');
    expect(proxy).toMatchObject({
      TASK_AGENT_URL: `http://127.0.0.1:${h.basePort + 6}`,
      TASK_AGENT_API_TOKEN: stored.get('TASK_AGENT_API_TOKEN'),
      TASK_AGENT_DB: join(h.home, 'data', 'task-agent', 'task-agent.sqlite'),
      TASK_PROXY_USER: 'clinician',
      TASK_PROXY_PASSWORD: password,
    });
    const agent = envOf('task-agent');
    expect(agent['TASK_AGENT_API_TOKEN']).toBe(stored.get('TASK_AGENT_API_TOKEN'));
    expect(agent['DATA_DIR']).toBe(join(h.home, 'data', 'task-agent'));
    expect(agent).not.toHaveProperty('TASK_PROXY_PASSWORD');
    expect(h.stdout()).toContain(
      `taskProxy sign-in at http://127.0.0.1:${h.basePort + 4}: user "clinician" (TASK_PROXY_USER from the ` +
        `environment), password TASK_PROXY_PASSWORD in ${tokensFile}`,
    );
    expect(h.stdout()).not.toContain(password);
  });

  it('reports a model that cannot be fetched and a service that is not built, and starts the rest', async () => {
    const h = await run({
      dirs: ['llm', 'medllm', 'agent', 'stt', 'ocr'],
      services: {
        llm: { enabled: true, model: { source: 'file:///nonexistent/models/tiny.gguf' } },
        face: { enabled: true },
        medllm: { enabled: true, dependsOn: ['face'] },
        agent: { enabled: true, dependsOn: ['llm'] },
        // stt never listens: ocr starts anyway after the bounded wait.
        stt: {
          enabled: true,
          model: sttModel,
          env: [{ name: 'FIXTURE_LISTEN_DELAY_MS', value: '600000' }],
        },
        ocr: { enabled: true, dependsOn: ['stt'] },
      },
      env: { CLINICALSUITE_DEPENDENCY_WAIT_MS: '1500' },
    });
    const modelPath = join(h.home, 'models', 'llm', 'tiny.gguf');
    const table = await h.waitForTable(
      (rows) => rows.get('llm')?.state === 'not-ready' && allReady(['medllm', 'agent', 'ocr'])(rows),
    );
    expect(row(table, 'llm').detail).toContain(`model file not found: ${modelPath}`);
    expect(row(table, 'face')).toMatchObject({ state: 'missing', pid: null });
    expect(row(table, 'face').detail).toBe(
      `${join(h.servicesDir, 'face')} is not built or not part of this checkout`,
    );
    expect(row(table, 'stt').state).toBe('starting');
    expect(h.stdout()).toContain('[llm] model fetch failed: ');
    expect(h.stdout()).toContain(modelPath);
    expect(h.stdout()).toContain('[ocr] starting anyway: waited 1.5 s for stt');
    const agentEnv = JSON.parse(readFileSync(join(h.home, 'data', 'agent', 'env.json'), 'utf8')) as Record<
      string,
      string
    >;
    expect(agentEnv['AI_AGENT_API_TOKEN']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(agentEnv['API_TOKEN']).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(h.stdout()).not.toContain(agentEnv['API_TOKEN']);

    // The file appears (as `npm run models -- fetch` would put it): the service turns ready.
    mkdirSync(dirname(modelPath), { recursive: true });
    writeFileSync(modelPath, 'GGUF');
    const ready = await h.waitForTable((rows) => rows.get('llm')?.state === 'ready');
    // A ready service with a model names the file it serves; one without says nothing.
    expect(row(ready, 'llm').detail).toBe('model tiny.gguf');
    expect(row(ready, 'agent').detail).toBe('');

    const pids = [...table.values()].flatMap((r) => (r.pid === null ? [] : [r.pid]));
    h.child.kill('SIGTERM');
    expect(await h.exited).toEqual({ code: 0, signal: null });
    expect(await waitUntilDead(pids)).toEqual([]);
  });

  it('kills a service that ignores SIGTERM after the stop timeout', async () => {
    const h = await run({
      dirs: ['ocr'],
      services: { ocr: { enabled: true, env: [{ name: 'FIXTURE_IGNORE_SIGTERM', value: '1' }] } },
      env: { CLINICALSUITE_STOP_TIMEOUT_MS: '700' },
    });
    const table = await h.waitForTable(allReady(['ocr']));
    h.child.kill('SIGINT');
    expect(await h.exited).toEqual({ code: 0, signal: null });
    expect(h.stdout()).toContain('[ocr] stopped (killed after 0.7 s)');
    expect(await waitUntilDead([row(table, 'ocr').pid!])).toEqual([]);
  });

  it('kills everything at once on a second Ctrl-C', async () => {
    const h = await run({
      dirs: ['ocr', 'patient-sim'],
      services: {
        ocr: { enabled: true, env: [{ name: 'FIXTURE_IGNORE_SIGTERM', value: '1' }] },
        patientSim: {
          enabled: true,
          dependsOn: ['ocr'],
          env: [{ name: 'FIXTURE_IGNORE_SIGTERM', value: '1' }],
        },
      },
    });
    const table = await h.waitForTable(allReady(['ocr', 'patientSim']));
    const started = Date.now();
    h.child.kill('SIGINT');
    await h.waitForOutput('SIGINT: stopping');
    h.child.kill('SIGINT');
    expect(await h.exited).toEqual({ code: 130, signal: null });
    expect(Date.now() - started).toBeLessThan(5000); // not the 10 s stop timeout
    expect(await waitUntilDead([row(table, 'ocr').pid!, row(table, 'patientSim').pid!])).toEqual([]);
  });

  it('rejects an invalid suite with the failing fields and exit code 2', async () => {
    const h = await run({
      dirs: [],
      services: { llm: { enabled: true, concurrency: 0 }, agent: { enabled: true, dependsOn: ['stt'] } },
    });
    expect(await h.exited).toEqual({ code: 2, signal: null });
    expect(h.stderr()).toContain('spec.services.llm.concurrency: must be >= 1');
    expect(h.stderr()).toContain('spec.services.agent.dependsOn[0]: "stt" is not enabled');
  });

  it('refuses env taken from a Secret (valueFrom), which only Kubernetes resolves, with exit code 2', async () => {
    const h = await run({
      dirs: [],
      services: {
        llm: { enabled: true, env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] },
      },
    });
    expect(await h.exited).toEqual({ code: 2, signal: null });
    expect(h.stderr()).toContain('spec.services.llm.env[0] (X) take their value from a Secret or ConfigMap');
  });

  it('says so and exits 0 when nothing is enabled; exits 2 on a missing file', async () => {
    const h = await run({ dirs: [], services: { llm: { enabled: false } } });
    expect(await h.exited).toEqual({ code: 0, signal: null });
    expect(h.stdout()).toContain('no service is enabled in');
    const missing = await run({ dirs: [], services: {}, args: ['/nonexistent/suite.yaml'] });
    expect(await missing.exited).toEqual({ code: 2, signal: null });
    expect(missing.stderr()).toContain('cannot read /nonexistent/suite.yaml');
  });
});
