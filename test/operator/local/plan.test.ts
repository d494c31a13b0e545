import { describe, expect, it } from '@jest/globals';
import { parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import { clusterOnlyEnv } from '../../../operator/src/plan/service-env.js';
import { planLocal, sourceBaseName, type PlanOptions } from '../../../operator/src/local/plan.js';

const tokens = { API_TOKEN: 'llm-token', AI_AGENT_API_TOKEN: 'agent-token' };
const options: PlanOptions = {
  home: '/h',
  servicesDir: '/s',
  tokens,
  inherit: { PATH: '/usr/bin', HOME: '/home/me' },
  manifest: { llm: { file: 'llm/gemma.gguf' } },
};

function suite(services: Record<string, unknown>): ReturnType<typeof parseSuite> {
  return parseSuite({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name: 't' },
    spec: { services },
  });
}

describe('planLocal', () => {
  it('plans the agent with its dependencies first, each with the contract env', () => {
    const plan = planLocal(
      suite({
        agent: {
          enabled: true,
          env: [
            { name: 'EXTRA', value: '1' },
            { name: 'LOG_LEVEL', value: 'debug' },
          ],
        },
        codeSearch: { enabled: true, queueSize: 5, requestTimeoutSeconds: 30 },
        llm: { enabled: true },
        patientSim: { enabled: true },
        stt: { enabled: false },
      }),
      options,
    );
    expect(plan.map((p) => p.component)).toEqual(['llm', 'codeSearch', 'patientSim', 'agent']);
    const [llm, codeSearch, , agent] = plan;
    expect(llm).toEqual({
      component: 'llm',
      title: 'Text LLM',
      dir: 'llm',
      entry: '/s/llm/dist/boot.cjs',
      port: 8001,
      url: 'http://127.0.0.1:8001',
      env: {
        PATH: '/usr/bin',
        HOME: '/home/me',
        PORT: '8001',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        CLINICALSUITE_HOME: '/h',
        EXIT_WITH_PARENT: 'true',
        // On a machine shared with the other services the LLM's event loop keeps its priority.
        EVENT_LOOP_NICE: '0',
        MODELS_DIR: '/h/models',
        DATA_DIR: '/h/data/llm',
        MAX_CONCURRENCY: '3',
        MODEL_PATH: '/h/models/llm/gemma.gguf',
        API_TOKEN: 'llm-token',
      },
      model: {
        id: 'llm',
        source: null,
        sha256: null,
        file: 'llm/gemma.gguf',
        path: '/h/models/llm/gemma.gguf',
      },
      extraModels: [],
      dependsOn: [],
      dataDir: '/h/data/llm',
      logFile: '/h/logs/llm.log',
    });
    expect(codeSearch?.env).toMatchObject({
      PORT: '8014',
      MAX_CONCURRENCY: '16',
      QUEUE_SIZE: '5',
      REQUEST_TIMEOUT_MS: '30000',
    });
    // Its embedding model (MODEL_PATH) at `<dir>/<id>`: the test's manifest does not list it.
    expect(codeSearch?.model).toMatchObject({
      id: 'codesearch-e5',
      path: '/h/models/codesearch/codesearch-e5',
    });
    expect(codeSearch?.env['MODEL_PATH']).toBe('/h/models/codesearch/codesearch-e5');
    expect(codeSearch?.entry).toBe('/s/codesearch/dist/main.js');
    expect(agent?.dependsOn).toEqual(['llm', 'codeSearch', 'patientSim']);
    expect(agent?.env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/me',
      PORT: '8002',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      CLINICALSUITE_HOME: '/h',
      EXIT_WITH_PARENT: 'true',
      MODELS_DIR: '/h/models',
      DATA_DIR: '/h/data/agent',
      MAX_CONCURRENCY: '16',
      AI_AGENT_API_TOKEN: 'agent-token',
      API_TOKEN: 'llm-token',
      LLM_URL: 'http://127.0.0.1:8001',
      CODE_SEARCH_URL: 'http://127.0.0.1:8014',
      PATIENT_SIM_URL: 'http://127.0.0.1:8015',
      EXTRA: '1',
    });
  });

  it('wires the task proxy to the task agent: URL, token, sign-in user and the agent’s SQLite file', () => {
    const secrets = {
      ...tokens,
      TASK_AGENT_API_TOKEN: 'task-agent-token',
      TASK_PROXY_USER: 'admin',
      TASK_PROXY_PASSWORD: 'proxy-password',
    };
    const plan = planLocal(
      suite({ llm: { enabled: true }, taskAgent: { enabled: true }, taskProxy: { enabled: true } }),
      { ...options, tokens: secrets },
    );
    expect(plan.map((p) => p.component)).toEqual(['llm', 'taskAgent', 'taskProxy']);
    const [, agent, proxy] = plan;
    expect(proxy?.dependsOn).toEqual(['taskAgent']);
    expect(proxy?.env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/me',
      PORT: '8005',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      CLINICALSUITE_HOME: '/h',
      EXIT_WITH_PARENT: 'true',
      MODELS_DIR: '/h/models',
      DATA_DIR: '/h/data/task-proxy',
      MAX_CONCURRENCY: '32',
      TASK_AGENT_API_TOKEN: 'task-agent-token',
      TASK_PROXY_USER: 'admin',
      TASK_PROXY_PASSWORD: 'proxy-password',
      TASK_AGENT_URL: 'http://127.0.0.1:8007',
      // The file the agent opens by default: $DATA_DIR/task-agent.sqlite.
      TASK_AGENT_DB: '/h/data/task-agent/task-agent.sqlite',
    });
    // The agent accepts its token and calls the llm with the llm's; no code search is enabled, so
    // it gets no CODE_SEARCH_URL; the sign-in user is the proxy's alone.
    expect(agent?.dependsOn).toEqual(['llm']);
    expect(agent?.env).toMatchObject({
      TASK_AGENT_API_TOKEN: 'task-agent-token',
      API_TOKEN: 'llm-token',
      LLM_URL: 'http://127.0.0.1:8001',
      DATA_DIR: '/h/data/task-agent',
    });
    for (const name of ['CODE_SEARCH_URL', 'TASK_PROXY_USER', 'TASK_PROXY_PASSWORD', 'TASK_AGENT_DB'])
      expect(agent?.env).not.toHaveProperty(name);

    const withSearch = planLocal(
      suite({ llm: { enabled: true }, codeSearch: { enabled: true }, taskAgent: { enabled: true } }),
      options,
    );
    expect(withSearch.find((p) => p.component === 'taskAgent')?.env['CODE_SEARCH_URL']).toBe(
      'http://127.0.0.1:8014',
    );
  });

  it('points the task proxy at the store the task agent really uses', () => {
    const proxyEnv = (taskAgent: Record<string, unknown>, taskProxy: Record<string, unknown> = {}) =>
      planLocal(
        suite({ taskAgent: { enabled: true, ...taskAgent }, taskProxy: { enabled: true, ...taskProxy } }),
        options,
      ).find((p) => p.component === 'taskProxy')?.env ?? {};
    const pg = 'postgres://tasks@db.example.org/tasks';
    // PostgreSQL: the same URL, and no SQLite file.
    const shared = proxyEnv({ env: [{ name: 'DATABASE_URL', value: pg }] });
    expect(shared['DATABASE_URL']).toBe(pg);
    expect(shared).not.toHaveProperty('TASK_AGENT_DB');
    // The agent's own TASK_AGENT_DB or DATA_DIR, a relative path taken from its working directory.
    expect(proxyEnv({ env: [{ name: 'TASK_AGENT_DB', value: '/var/tasks.db' }] })['TASK_AGENT_DB']).toBe(
      '/var/tasks.db',
    );
    expect(proxyEnv({ env: [{ name: 'TASK_AGENT_DB', value: 'db/tasks.db' }] })['TASK_AGENT_DB']).toBe(
      '/s/task-agent/db/tasks.db',
    );
    expect(proxyEnv({ env: [{ name: 'DATA_DIR', value: '/srv/agent' }] })['TASK_AGENT_DB']).toBe(
      '/srv/agent/task-agent.sqlite',
    );
    // The proxy's own spec env wins.
    expect(proxyEnv({}, { env: [{ name: 'TASK_AGENT_DB', value: '/copy.db' }] })['TASK_AGENT_DB']).toBe(
      '/copy.db',
    );
    // The stored data outlives the agent: with the agent switched off the proxy still reads its file.
    const [alone] = planLocal(suite({ taskProxy: { enabled: true } }), options);
    expect(alone?.env['TASK_AGENT_DB']).toBe('/h/data/task-agent/task-agent.sqlite');
    expect(alone?.env).not.toHaveProperty('TASK_AGENT_URL');
  });

  it('gives no token to a component that neither accepts nor calls one', () => {
    const [stt] = planLocal(suite({ stt: { enabled: true } }), options);
    expect(Object.keys(stt?.env ?? {}).filter((k) => k.includes('TOKEN'))).toEqual([]);
  });

  it('moves every port with basePortOverride, keeping the distances', () => {
    const plan = planLocal(
      suite({ llm: { enabled: true }, stt: { enabled: true }, ocr: { enabled: true, dependsOn: ['stt'] } }),
      {
        ...options,
        basePortOverride: 20001,
      },
    );
    expect(plan.map((p) => `${p.component}=${p.url}`)).toEqual([
      'llm=http://127.0.0.1:20001',
      'stt=http://127.0.0.1:20011',
      'ocr=http://127.0.0.1:20012',
    ]);
    expect(plan[2]?.env['STT_URL']).toBe('http://127.0.0.1:20011');
  });

  it('takes the model from spec.model.source or spec.model.file', () => {
    const [llm, face] = planLocal(
      suite({
        llm: { enabled: true, model: { file: 'mine.gguf' } },
        face: { enabled: true, model: { source: 'hf://org/repo/sub/face.onnx@v2', sha256: 'a'.repeat(64) } },
      }),
      options,
    );
    expect(llm?.model).toEqual({
      id: 'llm',
      source: null,
      sha256: null,
      file: 'llm/mine.gguf',
      path: '/h/models/llm/mine.gguf',
    });
    expect(face?.model).toEqual({
      id: null,
      source: 'hf://org/repo/sub/face.onnx@v2',
      sha256: 'a'.repeat(64),
      file: 'face/face.onnx',
      path: '/h/models/face/face.onnx',
    });
    expect(face?.env['MODEL_PATH']).toBe('/h/models/face/face.onnx');
  });

  it('defaults LOG_LEVEL to info and passes the runner LOG_LEVEL otherwise; leaks nothing else', () => {
    const [ocr] = planLocal(suite({ ocr: { enabled: true } }), {
      home: '/h',
      servicesDir: '/s',
      tokens,
      inherit: { LOG_LEVEL: 'warn' },
    });
    expect(ocr?.env['LOG_LEVEL']).toBe('warn');
    expect(ocr?.env).not.toHaveProperty('PATH');
  });

  it('plans a component’s further models (face: the detector beside the recognizer) at their manifest paths', () => {
    const [face] = planLocal(suite({ face: { enabled: true } }), {
      ...options,
      manifest: {
        'face-recognizer': { file: 'face/rec.onnx' },
        'face-detector': { file: 'face/det.onnx' },
      },
    });
    expect(face?.model).toMatchObject({ id: 'face-recognizer', path: '/h/models/face/rec.onnx' });
    expect(face?.env['MODEL_PATH']).toBe('/h/models/face/rec.onnx');
    expect(face?.extraModels).toEqual([
      {
        id: 'face-detector',
        source: null,
        sha256: null,
        file: 'face/det.onnx',
        path: '/h/models/face/det.onnx',
      },
    ]);
    const [claimed] = planLocal(
      suite({ face: { enabled: true, model: { existingClaim: 'faces', file: 'rec.onnx' } } }),
      options,
    );
    expect(claimed?.extraModels).toEqual([]);
  });

  it('plans medllm’s projector beside its model: fetched first of its extra files, named by MMPROJ_PATH', () => {
    const [medllm] = planLocal(
      suite({
        medllm: {
          enabled: true,
          model: { source: 'hf://o/r/medgemma.gguf', projector: { source: 'hf://o/r/mmproj-f16.gguf' } },
        },
      }),
      options,
    );
    expect(medllm?.env['MODEL_PATH']).toBe('/h/models/medllm/medgemma.gguf');
    expect(medllm?.env['MMPROJ_PATH']).toBe('/h/models/medllm/mmproj-f16.gguf');
    expect(medllm?.extraModels).toEqual([
      {
        id: null,
        source: 'hf://o/r/mmproj-f16.gguf',
        sha256: null,
        file: 'medllm/mmproj-f16.gguf',
        path: '/h/models/medllm/mmproj-f16.gguf',
      },
    ]);
    const [bare] = planLocal(suite({ medllm: { enabled: true } }), options);
    expect(bare?.env).not.toHaveProperty('MMPROJ_PATH');
    expect(bare?.extraModels).toEqual([]);
  });

  it('starts the llm through dist/boot.cjs, which sizes libuv’s pool; the rest through dist/main.js', () => {
    const plan = planLocal(
      suite({ llm: { enabled: true }, agent: { enabled: true }, face: { enabled: true } }),
      options,
    );
    expect(plan.map((p) => [p.component, p.entry])).toEqual([
      ['llm', '/s/llm/dist/boot.cjs'],
      ['face', '/s/face/dist/main.js'],
      ['agent', '/s/agent/dist/main.js'],
    ]);
    // The entry leaves a pool size the spec's env sets as it is.
    expect(plan[0]?.env).not.toHaveProperty('UV_THREADPOOL_SIZE');
    const [tuned] = planLocal(
      suite({ llm: { enabled: true, env: [{ name: 'UV_THREADPOOL_SIZE', value: '2' }] } }),
      options,
    );
    expect(tuned?.env['UV_THREADPOOL_SIZE']).toBe('2');
  });

  it('plans nothing when nothing is enabled', () => {
    expect(planLocal(suite({ llm: { enabled: false } }), options)).toEqual([]);
  });
});

describe('sourceBaseName', () => {
  it.each([
    ['https://example.org/a/b/model.gguf?download=1', 'model.gguf'],
    ['hf://org/repo/dir/x.gguf@main', 'x.gguf'],
    ['file:///tmp/x%20y.gguf', 'x y.gguf'],
    ['pip://pkg==1.0/mod/data/file.bin', 'file.bin'],
    ['https://example.org/', 'example.org'],
  ])('%s → %s', (source, name) => expect(sourceBaseName(source)).toBe(name));
});

describe('clusterOnlyEnv', () => {
  const ref = { secretKeyRef: { name: 'db', key: 'url' } };
  const parsed = (services: Record<string, unknown>) =>
    parseSuite({
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      metadata: { name: 's' },
      spec: { services },
    });

  it('names the valueFrom entries of enabled components and of the store owner an enabled one reads', () => {
    expect(
      clusterOnlyEnv(
        parsed({
          llm: {
            enabled: true,
            env: [
              { name: 'A', value: '1' },
              { name: 'B', valueFrom: ref },
            ],
          },
          stt: { enabled: false, env: [{ name: 'C', valueFrom: ref }] },
          taskAgent: { enabled: false, env: [{ name: 'DATABASE_URL', valueFrom: ref }] },
          taskProxy: { enabled: true },
        }),
      ),
    ).toEqual(['spec.services.llm.env[1] (B)', 'spec.services.taskAgent.env[0] (DATABASE_URL)']);
    expect(clusterOnlyEnv(parsed({ llm: { enabled: true, env: [{ name: 'A', value: '1' }] } }))).toEqual([]);
  });
});
