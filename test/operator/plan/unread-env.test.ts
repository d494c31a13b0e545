import { describe, expect, it } from '@jest/globals';
import { COMPONENT_KEYS } from '../../../operator/src/api/v1alpha1/index.js';
import {
  closestName,
  describeUnreadEnv,
  readEnvNames,
  unreadEnv,
  unreadFetchEnv,
} from '../../../operator/src/plan/unread-env.js';
import { configData, configWarnings, tokenEnv } from '../../../operator/src/resources/index.js';
import { sample, suiteWith } from '../resources/fixtures.js';

describe('closestName', () => {
  const llm = readEnvNames('llm');

  it.each([
    ['LLM_CONTEXT_SIZE', 'CONTEXT_SIZE'], // a prefix too many
    ['context_size', 'CONTEXT_SIZE'], // lower case
    ['CONTEXT_SIZ', 'CONTEXT_SIZE'], // a typo
    ['TREADS', 'THREADS'],
    ['GPU_LAYER', 'GPU_LAYERS'],
    ['MAX_CONCURENCY', 'MAX_CONCURRENCY'],
    ['ALIAS', 'MODEL_ALIAS'], // the one known name that ends with it
  ])('%s → %s', (name, meant) => {
    expect(closestName(name, llm)).toBe(meant);
  });

  it.each([
    'TIMEOUT_MS', // ends several names (QUEUE_, REQUEST_, BODY_IDLE_): no guess
    'RETENTION_DAYS',
    'GPU_MEMORY', // two edits from nothing of the llm's
    'FOO',
  ])('%s → none', (name) => {
    expect(closestName(name, llm)).toBeUndefined();
  });

  it('prefers the longest known name the unread one holds', () => {
    expect(closestName('MY_GPU_LAYERS', ['GPU', 'GPU_LAYERS', 'LAYERS'])).toBe('GPU_LAYERS');
    expect(closestName('GPU_MEMORY', ['GPU', 'GPU_LAYERS'])).toBeUndefined(); // not a kind of GPU
  });
});

describe('unreadEnv', () => {
  it('reports what the service does not read, with a hint, and nothing the runtime or the service reads', () => {
    const suite = suiteWith({
      llm: {
        enabled: true,
        env: [
          { name: 'CONTEXT_SIZE', value: '8192' },
          { name: 'LLM_CONTEXT_SIZE', value: '8192' },
          { name: 'NODE_OPTIONS', value: '--max-old-space-size=4096' },
          { name: 'UV_THREADPOOL_SIZE', value: '4' },
          { name: 'CUDA_VISIBLE_DEVICES', value: '0' },
          { name: 'TZ', value: 'Asia/Ho_Chi_Minh' },
          { name: 'HF_TOKEN', value: 'x' },
          { name: 'MODEL_MIRROR', value: 'http://10.0.0.5:8080' },
          { name: 'WIDGET_COLOUR', value: 'blue' },
        ],
      },
      taskAgent: { enabled: true, env: [{ name: 'TASK_AGENT_RETENTION_DAY', value: '30' }] },
    });
    expect(unreadEnv(suite, 'llm').map(describeUnreadEnv)).toEqual([
      'llm: env LLM_CONTEXT_SIZE is read by nothing in the llm service, so it changes nothing; did you mean CONTEXT_SIZE?',
      'llm: env HF_TOKEN is read by nothing in the llm service, so it changes nothing; the model fetch reads it, not ' +
        "the service: on Kubernetes set it in spec.services.llm.model.fetchEnv (the local runner's fetch reads the " +
        "runner's own environment)",
      'llm: env MODEL_MIRROR is read by nothing in the llm service, so it changes nothing; the model fetch reads it, ' +
        "not the service: on Kubernetes set it in spec.services.llm.model.fetchEnv (the local runner's fetch reads " +
        "the runner's own environment)",
      'llm: env WIDGET_COLOUR is read by nothing in the llm service, so it changes nothing; services/llm/README.md lists what it reads',
    ]);
    expect(unreadEnv(suite, 'taskAgent')).toEqual([
      {
        key: 'taskAgent',
        field: 'env',
        name: 'TASK_AGENT_RETENTION_DAY',
        hint: 'did you mean TASK_AGENT_RETENTION_DAYS?',
      },
    ]);
    expect(unreadEnv(suite, 'agent')).toEqual([]);
  });

  it('knows each service by its own names: what one reads is unread by another', () => {
    const suite = suiteWith({
      llm: { enabled: true, env: [{ name: 'DATABASE_URL', value: 'postgres://db/x' }] },
      taskAgent: { enabled: true, env: [{ name: 'DATABASE_URL', value: 'postgres://db/x' }] },
    });
    expect(unreadEnv(suite, 'llm').map((u) => u.name)).toEqual(['DATABASE_URL']);
    expect(unreadEnv(suite, 'taskAgent')).toEqual([]);
  });

  it('knows what a service reads beside its schema: the task proxy first user password', () => {
    const secretKeyRef = { name: 'proxy', key: 'password' };
    const suite = suiteWith({
      taskProxy: {
        enabled: true,
        env: [
          { name: 'TASK_PROXY_USER', value: 'clinician' },
          { name: 'TASK_PROXY_PASSWORD', valueFrom: { secretKeyRef } },
        ],
      },
    });
    expect(unreadEnv(suite, 'taskProxy')).toEqual([]);
  });
});

describe('unreadFetchEnv', () => {
  it("reports what the model fetch does not read: a typo, and a service's setting put there", () => {
    const suite = suiteWith({
      llm: {
        enabled: true,
        model: {
          source: 'hf://o/r/m.gguf',
          fetchEnv: [
            { name: 'HF_TOKEN', value: 'x' },
            { name: 'HF_ENDPOINT', value: 'https://mirror.example' },
            { name: 'MODEL_MIRROR', value: 'http://10.0.0.5:8080' },
            { name: 'PIP_INDEX_URL', value: 'https://pypi.example/simple' },
            { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
            { name: 'HF_TOKN', value: 'x' },
            { name: 'MODEL_MIROR', value: 'http://10.0.0.5:8080' },
            { name: 'CONTEXT_SIZE', value: '8192' },
          ],
        },
      },
    });
    expect(unreadFetchEnv(suite, 'llm').map(describeUnreadEnv)).toEqual([
      "llm: model.fetchEnv HF_TOKN is read by nothing in llm's model fetch, so it changes nothing; did you mean HF_TOKEN?",
      "llm: model.fetchEnv MODEL_MIROR is read by nothing in llm's model fetch, so it changes nothing; did you mean MODEL_MIRROR?",
      "llm: model.fetchEnv CONTEXT_SIZE is read by nothing in llm's model fetch, so it changes nothing; the service " +
        'reads it, not the fetch: set it in spec.services.llm.env',
    ]);
    expect(unreadEnv(suite, 'llm')).toEqual([]);
  });

  it('is among the warnings the operator records for the component', () => {
    const suite = suiteWith({
      llm: {
        enabled: true,
        env: [{ name: 'LLM_THREADS', value: '4' }],
        model: { source: 'hf://o/r/m.gguf', fetchEnv: [{ name: 'HF_ENDPOINTS', value: 'x' }] },
      },
    });
    expect(configWarnings(suite, 'llm')).toEqual([
      {
        reason: 'UnreadEnv',
        message:
          'llm: env LLM_THREADS is read by nothing in the llm service, so it changes nothing; did you mean THREADS?',
      },
      {
        reason: 'UnreadEnv',
        message:
          "llm: model.fetchEnv HF_ENDPOINTS is read by nothing in llm's model fetch, so it changes nothing; " +
          'did you mean HF_ENDPOINT?',
      },
    ]);
  });
});

describe('what the operator sets', () => {
  it("is read by each service: every variable of full.yaml's ConfigMaps and containers is in its list", () => {
    const full = sample('full');
    const unread = COMPONENT_KEYS.flatMap((key) => {
      const read = new Set(readEnvNames(key));
      const set = [...Object.keys(configData(full, key)), ...tokenEnv(full, key).map((e) => e.name)];
      return set.filter((name) => !read.has(name)).map((name) => `${key}: ${name}`);
    });
    expect(unread).toEqual([]);
  });
});
