/**
 * Credentials never in ConfigMaps or pod specs: a plain env value that holds one (a DATABASE_URL,
 * a *_PASSWORD or *_TOKEN, a URL with a password) is moved into the suite's env Secret and read
 * through a secretKeyRef, its key named by an HMAC so that a new value rolls the pods without the
 * Deployment revealing anything of it.
 */
import { describe, expect, it } from '@jest/globals';
import {
  buildEnvSecret,
  buildSuiteObjects,
  credentialReason,
  DEFAULT_OPERATOR_CONFIG,
  ENV_SECRET_DIGEST_KEY,
  planEnvSecret,
  type KubeObject,
} from '../../../operator/src/resources/index.js';
import { suiteWith, UID } from './fixtures.js';

const PASSWORD = 'S3cr3t-pw-for-the-test';
const DB = `postgres://tasks:${PASSWORD}@postgres.db.svc:5432/tasks`;
const KEY = 'digest-key-of-the-test';

const suite = (db = DB, extra: Record<string, unknown> = {}) =>
  suiteWith({
    taskAgent: {
      enabled: true,
      replicas: 2,
      env: [
        { name: 'DATABASE_URL', value: db },
        { name: 'LOG_LEVEL', value: 'debug' },
      ],
    },
    taskProxy: { enabled: true },
    llm: {
      enabled: true,
      env: [{ name: 'LLM_CONTEXT_SIZE', value: '8192' }],
      model: { source: 'hf://o/r/m.gguf', fetchEnv: [{ name: 'HF_TOKEN', value: 'hf_plain_token_value' }] },
    },
    ...extra,
  });

type Env = { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } };
type Pod = { initContainers?: { env?: Env[] }[]; containers: { name: string; env?: Env[] }[] };

function podOf(objects: KubeObject[], name: string): Pod {
  const d = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
  if (d?.kind !== 'Deployment') throw new Error(`no Deployment ${name}`);
  return d.spec.template.spec as unknown as Pod;
}

describe('credentialReason', () => {
  it.each([
    ['DATABASE_URL', DB, 'a database address, which may carry its password'],
    [
      'DATABASE_URL',
      'postgres://tasks@postgres.db.svc/tasks',
      'a database address, which may carry its password',
    ],
    ['PGPASSWORD', 'x', 'its name says it holds a credential'],
    ['SMTP_PASSWORD', 'x', 'its name says it holds a credential'],
    ['MYSQL_PWD', 'x', 'its name says it holds a credential'],
    ['HF_TOKEN', 'hf_x', 'its name says it holds a credential'],
    ['JWT_SECRET', 'x', 'its name says it holds a credential'],
    ['OPENAI_API_KEY', 'sk-x', 'its name says it holds a credential'],
    ['AWS_SECRET_ACCESS_KEY', 'x', 'its name says it holds a credential'],
    ['hf_token', 'x', 'its name says it holds a credential'],
    ['CACHE_URL', 'redis://default:pw@redis:6379/0', 'a URL carrying a password'],
    ['PG_CONN', 'host=db user=u password=pw dbname=x', 'it carries a password parameter'],
    ['UPSTREAM', 'https://api.example/v1?user=u&password=pw', 'it carries a password parameter'],
  ])('%s=%s is a credential: %s', (name, value, reason) => {
    expect(credentialReason(name, value)).toBe(reason);
  });

  it.each([
    ['LLM_URL', 'http://demo-llm.clinical.svc:8080'],
    ['CACHE_URL', 'redis://redis:6379/0'],
    ['AGENT_MAX_TOKENS', '512'],
    ['LLM_CONTEXT_SIZE', '8192'],
    ['AUTH_TOKENS_FILE', '/etc/tokens'],
    ['PWD', '/srv'],
    ['DATABASE_URL', ''],
    ['PGPASSWORD', ''],
  ])('%s=%s is not', (name, value) => {
    expect(credentialReason(name, value)).toBeNull();
  });
});

describe('planEnvSecret', () => {
  it('keeps every plain credential out of every ConfigMap and pod spec (the value is in the Secret only)', () => {
    const plain = suite();
    // What the builders made of the suite as written: the password in a ConfigMap.
    expect(JSON.stringify(buildSuiteObjects(plain, DEFAULT_OPERATOR_CONFIG))).toContain(PASSWORD);

    const plan = planEnvSecret(plain, KEY);
    const objects = buildSuiteObjects(plan.suite, DEFAULT_OPERATOR_CONFIG);
    const text = JSON.stringify(objects);
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain('hf_plain_token_value');
    expect(text).not.toContain(KEY);
    // What is not a credential stays where it was.
    const taskAgentConfig = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'demo-task-agent',
    );
    expect(taskAgentConfig?.kind === 'ConfigMap' && taskAgentConfig.data['LOG_LEVEL']).toBe('debug');

    const ref = (pod: Pod, name: string) => pod.containers[0]?.env?.find((e) => e.name === name)?.valueFrom;
    const agentRef = ref(podOf(objects, 'demo-task-agent'), 'DATABASE_URL');
    expect(agentRef?.secretKeyRef).toEqual({
      name: 'demo-env-secrets',
      key: expect.stringMatching(/^task-agent\.DATABASE_URL\.[0-9a-f]{16}$/),
    });
    // The task proxy reads the agent's store: it gets the same reference, not a copy of the value.
    expect(ref(podOf(objects, 'demo-task-proxy'), 'DATABASE_URL')).toEqual(agentRef);
    const fetch = podOf(objects, 'demo-llm').initContainers?.[0]?.env?.find((e) => e.name === 'HF_TOKEN');
    expect(fetch?.valueFrom?.secretKeyRef?.key).toMatch(/^llm\.fetch\.HF_TOKEN\.[0-9a-f]{16}$/);

    const decoded = Object.fromEntries(
      Object.entries(plan.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(decoded).toEqual({
      [agentRef!.secretKeyRef!.key]: DB,
      [fetch!.valueFrom!.secretKeyRef!.key]: 'hf_plain_token_value',
      [ENV_SECRET_DIGEST_KEY]: KEY,
    });
    expect(plan.moved.map((m) => `${m.path} ${m.name}`)).toEqual([
      'spec.services.llm.model.fetchEnv[0] HF_TOKEN',
      'spec.services.taskAgent.env[0] DATABASE_URL',
    ]);
  });

  it('names a new key when the value changes (the pods roll), the same one otherwise, and is idempotent', () => {
    const key = (s: ReturnType<typeof suite>, digestKey = KEY) =>
      podOf(
        buildSuiteObjects(planEnvSecret(s, digestKey).suite, DEFAULT_OPERATOR_CONFIG),
        'demo-task-agent',
      ).containers[0]?.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef?.key;
    const first = key(suite());
    expect(key(suite())).toBe(first);
    expect(key(suite(DB.replace(PASSWORD, 'another-password')))).not.toBe(first);
    // An unrelated change keeps the key; so does the name of the suite's other services.
    expect(key(suite(DB, { ocr: { enabled: true } }))).toBe(first);
    // Under another digest key the name differs: it depends on the secret key, not the value alone.
    expect(key(suite(), 'another-digest-key')).not.toBe(first);
    const once = planEnvSecret(suite(), KEY);
    const twice = planEnvSecret(once.suite, KEY);
    expect(twice.moved).toEqual([]);
    expect(twice.suite).toEqual(once.suite);
  });

  it('moves nothing from a disabled service, an empty value or a reference, and then needs no Secret', () => {
    const plan = planEnvSecret(
      suiteWith({
        face: { enabled: false, env: [{ name: 'DATABASE_URL', value: DB }] },
        taskAgent: {
          enabled: true,
          env: [
            { name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'db', key: 'url' } } },
            { name: 'PGPASSWORD', value: '' },
          ],
        },
      }),
      KEY,
    );
    expect(plan.moved).toEqual([]);
    expect(plan.data).toBeNull();
  });

  it('builds the env Secret owned by the suite, labelled as its own', () => {
    const s = suite();
    const secret = buildEnvSecret(s, planEnvSecret(s, KEY).data!);
    expect(secret.metadata).toEqual({
      name: 'demo-env-secrets',
      namespace: 'clinical',
      labels: {
        'app.kubernetes.io/instance': 'demo',
        'app.kubernetes.io/managed-by': 'clinicalsuite-operator',
        'app.kubernetes.io/part-of': 'clinicalsuite',
      },
      ownerReferences: [
        {
          apiVersion: 'clinicalsuite.ai/v1alpha1',
          kind: 'ClinicalSuite',
          name: 'demo',
          uid: UID,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    });
    expect(secret.type).toBe('Opaque');
  });
});
