/**
 * Env from Secrets and ConfigMaps: a `valueFrom` entry is set on the container (never copied into a
 * ConfigMap), a store reader gets its owner's DATABASE_URL reference, and the model-fetch init
 * containers get `model.fetchEnv`.
 */
import { describe, expect, it } from '@jest/globals';
import {
  buildConfigMap,
  buildDeployment,
  DEFAULT_OPERATOR_CONFIG,
  podData,
  storeWarnings,
} from '../../../operator/src/resources/index.js';
import { suiteWith } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;
const dbRef = { secretKeyRef: { name: 'task-db', key: 'url' } };

describe('env valueFrom', () => {
  const suite = suiteWith({
    taskAgent: {
      enabled: true,
      replicas: 2,
      env: [
        { name: 'DATABASE_URL', valueFrom: dbRef },
        { name: 'PGAPPNAME', valueFrom: { configMapKeyRef: { name: 'pg', key: 'app', optional: true } } },
        { name: 'LOG_LEVEL', value: 'debug' },
      ],
    },
    taskProxy: { enabled: true },
  });

  it('sets the reference on the container and keeps it (and its name) out of the ConfigMap', () => {
    const data = buildConfigMap(suite, 'taskAgent').data;
    expect(data['DATABASE_URL']).toBeUndefined();
    expect(data['PGAPPNAME']).toBeUndefined();
    expect(data['LOG_LEVEL']).toBe('debug');
    const env = buildDeployment(suite, 'taskAgent', config).spec.template.spec.containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: 'DATABASE_URL', valueFrom: dbRef });
    expect(env).toContainEqual({
      name: 'PGAPPNAME',
      valueFrom: { configMapKeyRef: { name: 'pg', key: 'app', optional: true } },
    });
    expect(JSON.stringify(buildConfigMap(suite, 'taskAgent'))).not.toContain('task-db');
  });

  it('puts an entry with neither value nor valueFrom in the ConfigMap as an empty value', () => {
    const blank = suiteWith({ llm: { env: [{ name: 'HTTPS_PROXY' }] } });
    expect(buildConfigMap(blank, 'llm').data['HTTPS_PROXY']).toBe('');
  });

  it('counts a referenced DATABASE_URL as a shared store: no data volume', () => {
    expect(podData(suite, 'taskAgent').claimName).toBeNull();
  });

  it("gives the task proxy the task agent's reference, not a value, and no NoSharedStore warning", () => {
    expect(buildConfigMap(suite, 'taskProxy').data['DATABASE_URL']).toBeUndefined();
    const env = buildDeployment(suite, 'taskProxy', config).spec.template.spec.containers[0]?.env ?? [];
    expect(env).toContainEqual({ name: 'DATABASE_URL', valueFrom: dbRef });
    expect(storeWarnings(suite, 'taskProxy')).toEqual([]);
  });

  it("lets the proxy's own DATABASE_URL win over the copied reference", () => {
    const own = suiteWith({
      taskAgent: { enabled: true, env: [{ name: 'DATABASE_URL', valueFrom: dbRef }] },
      taskProxy: { enabled: true, env: [{ name: 'DATABASE_URL', value: 'postgres://ro@db/t' }] },
    });
    expect(buildConfigMap(own, 'taskProxy').data['DATABASE_URL']).toBe('postgres://ro@db/t');
    const env = buildDeployment(own, 'taskProxy', config).spec.template.spec.containers[0]?.env ?? [];
    expect(env.find((e) => e.name === 'DATABASE_URL')).toBeUndefined();
  });

  it('replaces a token env var of the same name instead of listing the name twice', () => {
    const tokens = suiteWith({
      llm: {
        enabled: true,
        env: [{ name: 'API_TOKEN', valueFrom: { secretKeyRef: { name: 'mine', key: 't' } } }],
      },
    });
    const env = buildDeployment(tokens, 'llm', config).spec.template.spec.containers[0]?.env ?? [];
    expect(env.filter((e) => e.name === 'API_TOKEN')).toEqual([
      { name: 'API_TOKEN', valueFrom: { secretKeyRef: { name: 'mine', key: 't' } } },
    ]);
  });
});

describe('model.fetchEnv', () => {
  const suite = suiteWith({
    medllm: {
      enabled: true,
      model: {
        source: 'hf://google/medgemma-4b-it-gguf/medgemma-4b-it-q4_k_m.gguf',
        projector: { source: 'hf://google/medgemma-4b-it-gguf/mmproj-f16.gguf' },
        fetchEnv: [
          { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf-token', key: 'token' } } },
          { name: 'HF_ENDPOINT', value: 'https://hf-mirror.example.org' },
        ],
      },
    },
  });
  const pod = buildDeployment(suite, 'medllm', config).spec.template.spec;

  it('gives every fetch init container HOME and the fetch env', () => {
    expect(pod.initContainers?.map((c) => c.name)).toEqual(['fetch-model', 'fetch-projector']);
    for (const c of pod.initContainers ?? []) {
      expect(c.env).toEqual([
        { name: 'HOME', value: '/tmp' },
        { name: 'HF_TOKEN', valueFrom: { secretKeyRef: { name: 'hf-token', key: 'token' } } },
        { name: 'HF_ENDPOINT', value: 'https://hf-mirror.example.org' },
      ]);
    }
  });

  it('never gives the fetch env to the service', () => {
    expect(JSON.stringify(pod.containers)).not.toContain('HF_TOKEN');
    expect(buildConfigMap(suite, 'medllm').data['HF_ENDPOINT']).toBeUndefined();
  });
});
