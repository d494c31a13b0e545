import { describe, expect, it } from '@jest/globals';
import { z } from 'zod';
import { buildCrd } from '../../../operator/src/api/v1alpha1/crd.js';
import {
  ClinicalSuiteSchema,
  MAX_SUITE_NAME_LENGTH,
  parseSuite,
  SuiteValidationError,
  type ClinicalSuiteInput,
} from '../../../operator/src/api/v1alpha1/index.js';

function suite(spec: Record<string, unknown> = {}, name = 'test'): ClinicalSuiteInput {
  return {
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name },
    spec,
  };
}

function issuesOf(input: unknown): string[] {
  try {
    parseSuite(input);
  } catch (error) {
    if (error instanceof SuiteValidationError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  throw new Error('expected the suite to be rejected');
}

describe('ClinicalSuite schema: defaults', () => {
  it('fills suite-wide defaults into an empty spec', () => {
    const parsed = parseSuite(suite());
    expect(parsed.spec).toEqual({
      image: {
        registry: 'ghcr.io',
        repository: 'clinicalsuite/clinicalsuite',
        tag: '0.1.0',
        pullPolicy: 'IfNotPresent',
        pullSecrets: [],
      },
      defaultResourceProfile: 'cpu:1',
      defaultGpuResourceProfile: 'nvidia-gpu:1',
      monitoring: { serviceMonitor: false, scrapeInterval: '30s' },
      networkPolicy: { enabled: false },
      auth: {},
      retainModels: false,
      services: {},
    });
  });

  it('fills per-service defaults, concurrency from the catalogue', () => {
    const parsed = parseSuite(
      suite({ services: { llm: {}, agent: { enabled: true }, face: { model: {} } } }),
    );
    expect(parsed.spec.services.llm).toEqual({ enabled: false, replicas: 1, concurrency: 3, env: [] });
    expect(parsed.spec.services.agent?.concurrency).toBe(16);
    expect(parsed.spec.services.face?.model).toEqual({ accessMode: 'ReadWriteOnce' });
    expect(parsed.spec.services.stt).toBeUndefined();
  });

  it('keeps unknown metadata (uid, resourceVersion …) the API server adds', () => {
    const parsed = parseSuite({ ...suite(), metadata: { name: 'x', uid: 'abc', resourceVersion: '7' } });
    expect(parsed.metadata).toMatchObject({ name: 'x', uid: 'abc', resourceVersion: '7' });
  });
});

describe('ClinicalSuite schema: rejections name the field and the problem', () => {
  it.each([
    [{ services: { llm: { concurrency: 0 } } }, 'spec.services.llm.concurrency: must be >= 1'],
    [{ services: { llm: { concurrency: 2000 } } }, 'spec.services.llm.concurrency: must be <= 1024'],
    [
      { services: { llm: { concurrency: 1.5 } } },
      'spec.services.llm.concurrency: must be an integer, got number',
    ],
    [{ services: { llm: { replicas: -1 } } }, 'spec.services.llm.replicas: must be >= 0'],
    [{ services: { llm: { enabled: 'yes' } } }, 'spec.services.llm.enabled: must be a boolean, got string'],
    [
      { services: { llm: { resourceProfile: 'nvidia-gpu-l4' } } },
      'spec.services.llm.resourceProfile: must look like <profile>:<count>, e.g. nvidia-gpu-l4:1 or cpu:2',
    ],
    [
      { services: { llm: { resourceProfile: 'cpu:1', resources: { limits: { memory: '1Gi' } } } } },
      'spec.services.llm.resources: set either resourceProfile or resources, not both',
    ],
    [
      { services: { agent: { resources: { requests: { memory: 'lots' } } } } },
      'spec.services.agent.resources.requests.memory: must be a quantity like 500m, 2, 1.5 or 8Gi',
    ],
    [
      { services: { llm: { model: { source: 'ftp://example.org/x.gguf' } } } },
      'spec.services.llm.model.source: must be a URI with scheme https://, hf://, file:// or pip://',
    ],
    [
      { services: { llm: { model: { accessMode: 'ReadWriteSometimes' } } } },
      'spec.services.llm.model.accessMode: must be one of: ReadWriteOnce, ReadOnlyMany, ReadWriteMany',
    ],
    [
      { services: { llm: { model: { file: '../etc/passwd' } } } },
      'spec.services.llm.model.file: must not contain "." or ".." segments',
    ],
    [
      { services: { llm: { model: { existingClaim: 'models', size: '1Gi' } } } },
      'spec.services.llm.model.existingClaim: existingClaim cannot be combined with storageClass or size',
    ],
    [
      { services: { face: { storage: { existingClaim: 'registry', storageClass: 'fast' } } } },
      'spec.services.face.storage.existingClaim: existingClaim cannot be combined with storageClass or size',
    ],
    [
      { services: { taskAgent: { storage: { size: 'big' } } } },
      'spec.services.taskAgent.storage.size: must be a quantity like 500m, 2, 1.5 or 8Gi',
    ],
    [
      {
        services: { llm: { model: { source: 'hf://o/r/m.gguf', projector: { source: 'hf://o/r/p.gguf' } } } },
      },
      'spec.services.llm.model.projector: llm takes no multimodal projector: model.projector is only for medllm (a llama.cpp mmproj GGUF beside the model)',
    ],
    [
      {
        services: { medllm: { model: { source: 'hf://o/r/m.gguf', projector: { sha256: 'a'.repeat(64) } } } },
      },
      'spec.services.medllm.model.projector: projector needs a source or a file',
    ],
    [
      { services: { medllm: { model: { projector: { source: 'hf://o/r/mmproj.gguf' } } } } },
      'spec.services.medllm.model.projector: projector goes with a model on the model volume: set model.source, model.file or model.existingClaim too',
    ],
    [
      { services: { medllm: { model: { file: 'm.gguf', projector: { source: 'ftp://o/mmproj.gguf' } } } } },
      'spec.services.medllm.model.projector.source: must be a URI with scheme https://, hf://, file:// or pip://',
    ],
    [
      { services: { medllm: { model: { file: 'm.gguf', projector: { file: '../mmproj.gguf' } } } } },
      'spec.services.medllm.model.projector.file: must not contain "." or ".." segments',
    ],
    [
      { services: { llm: { storage: { size: '1Gi' } } } },
      'spec.services.llm.storage: llm keeps no data of its own: storage is only for components with an embedded store (face, taskAgent)',
    ],
    [
      { services: { llm: { env: [{ name: '1BAD', value: 'x' }] } } },
      'spec.services.llm.env[0].name: must be letters, digits and "_", not starting with a digit',
    ],
    [
      {
        services: {
          llm: {
            env: [
              { name: 'A', value: '1' },
              { name: 'A', value: '2' },
            ],
          },
        },
      },
      'spec.services.llm.env: names must be unique',
    ],
    [{ services: { lmm: { enabled: true } } }, 'spec.services.lmm: unknown field'],
    [
      { services: { llm: { dependsOn: ['gpt'] } } },
      'spec.services.llm.dependsOn[0]: must be one of: llm, agent',
    ],
    [
      { monitoring: { scrapeInterval: 'often' } },
      'spec.monitoring.scrapeInterval: must be a duration like 30s',
    ],
    [
      { image: { pullPolicy: 'Sometimes' } },
      'spec.image.pullPolicy: must be one of: Always, IfNotPresent, Never',
    ],
    [{ auth: { apiTokenSecretRef: {} } }, 'spec.auth.apiTokenSecretRef.name: required'],
  ])('%j → %s', (spec, expected) => {
    expect(issuesOf(suite(spec)).join('\n')).toContain(expected);
  });

  it('checks apiVersion, kind and metadata.name', () => {
    const issues = issuesOf({ apiVersion: 'v1', kind: 'Suite', metadata: { name: 'Not_A_Label' } });
    expect(issues).toEqual([
      'apiVersion: must be "clinicalsuite.ai/v1alpha1"',
      'kind: must be "ClinicalSuite"',
      'metadata.name: must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter): it prefixes Service names',
    ]);
  });

  it('refuses a suite name starting with a digit or longer than a label value, in the CRD too', () => {
    expect(issuesOf(suite({}, '1clinic'))).toEqual([
      'metadata.name: must be a DNS-1035 label (lowercase letters, digits and "-", starting with a letter): it prefixes Service names',
    ]);
    expect(MAX_SUITE_NAME_LENGTH).toBe(63);
    // Longer than its longest object name leaves room for: those names are cut and hashed.
    expect(parseSuite(suite({}, 'c'.repeat(63))).metadata.name).toHaveLength(63);
    expect(issuesOf(suite({}, 'c'.repeat(64)))[0]).toContain('metadata.name: must be at most 63 characters');
    const root = (
      buildCrd() as { spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] } }
    ).spec.versions[0]?.schema.openAPIV3Schema;
    expect(root?.['x-kubernetes-validations']).toEqual([
      expect.objectContaining({ rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')" }),
      expect.objectContaining({ rule: 'size(self.metadata.name) <= 63' }),
    ]);
  });

  it('lists every failing field in one error message', () => {
    const error = (() => {
      try {
        parseSuite(suite({ services: { llm: { concurrency: 0, replicas: -2 }, face: { queueSize: -1 } } }));
      } catch (e) {
        return e as Error;
      }
      return new Error('accepted');
    })();
    expect(error).toBeInstanceOf(SuiteValidationError);
    expect(error.message).toBe(
      [
        'invalid ClinicalSuite:',
        '  spec.services.llm.replicas: must be >= 0',
        '  spec.services.llm.concurrency: must be >= 1',
        '  spec.services.face.queueSize: must be >= 0',
      ].join('\n'),
    );
  });

  it('requires a shared database for more than one face or task agent replica (each would keep its own store)', () => {
    expect(issuesOf(suite({ services: { face: { enabled: true, replicas: 2 } } }))).toEqual([
      'spec.services.face.replicas: more than one replica needs env DATABASE_URL (a shared database): each replica would otherwise keep its own store',
    ]);
    expect(issuesOf(suite({ services: { taskAgent: { enabled: true, replicas: 3 } } }))).toEqual([
      'spec.services.taskAgent.replicas: more than one replica needs env DATABASE_URL (a shared database): each replica would otherwise keep its own store',
    ]);
    expect(
      parseSuite(
        suite({
          services: {
            taskAgent: {
              enabled: true,
              replicas: 3,
              env: [{ name: 'DATABASE_URL', value: 'postgres://db/t' }],
            },
          },
        }),
      ).spec.services.taskAgent?.replicas,
    ).toBe(3);
    const shared = parseSuite(
      suite({
        services: {
          face: { enabled: true, replicas: 2, env: [{ name: 'DATABASE_URL', value: 'postgres://db/face' }] },
        },
      }),
    );
    expect(shared.spec.services.face?.replicas).toBe(2);
    expect(
      parseSuite(suite({ services: { llm: { enabled: true, replicas: 3 } } })).spec.services.llm?.replicas,
    ).toBe(3);
  });

  it('accepts the task agent and its proxy without the code search (a disabled default dependency)', () => {
    const parsed = parseSuite(
      suite({
        services: { llm: { enabled: true }, taskAgent: { enabled: true }, taskProxy: { enabled: true } },
      }),
    );
    expect(parsed.spec.services.taskAgent?.enabled).toBe(true);
    expect(parsed.spec.services.codeSearch).toBeUndefined();
  });

  it('takes the task agent token and the task proxy users from Secrets of the user’s choice', () => {
    const parsed = parseSuite(
      suite({
        auth: {
          taskAgentTokenSecretRef: { name: 'tokens' },
          taskProxyUsersSecretRef: { name: 'proxy-users' },
        },
      }),
    );
    expect(parsed.spec.auth).toEqual({
      taskAgentTokenSecretRef: { name: 'tokens', key: 'token' },
      taskProxyUsersSecretRef: { name: 'proxy-users', key: 'users' },
    });
  });

  it('rejects something that is not an object at all', () => {
    expect(issuesOf('hello')).toEqual(['(root): must be an object, got string']);
  });
});

describe('ClinicalSuite schema: dependsOn', () => {
  it('rejects a dependency on a component that is not enabled', () => {
    expect(issuesOf(suite({ services: { agent: { enabled: true, dependsOn: ['llm'] } } }))).toEqual([
      'spec.services.agent.dependsOn[0]: "llm" is not enabled: set spec.services.llm.enabled: true or remove it from dependsOn',
    ]);
  });

  it('rejects a cycle and names it', () => {
    const spec = {
      services: {
        llm: { enabled: true, dependsOn: ['taskProxy'] },
        taskProxy: { enabled: true },
        taskAgent: { enabled: true },
      },
    };
    expect(issuesOf(suite(spec))).toEqual([
      'spec.services.llm.dependsOn: dependency cycle: llm -> taskProxy -> taskAgent -> llm',
    ]);
  });

  it('rejects a component that depends on itself and duplicates', () => {
    const spec = { services: { ocr: { enabled: true, dependsOn: ['ocr', 'ocr'] } } };
    expect(issuesOf(suite(spec))).toEqual([
      'spec.services.ocr.dependsOn[1]: "ocr" is listed more than once',
      'spec.services.ocr.dependsOn: dependency cycle: ocr -> ocr',
    ]);
  });

  it('ignores the dependsOn of disabled components and disabled default dependencies', () => {
    const parsed = parseSuite(
      suite({ services: { agent: { enabled: true }, llm: { enabled: false, dependsOn: ['face'] } } }),
    );
    expect(parsed.spec.services.agent?.enabled).toBe(true);
  });
});

describe('ClinicalSuite schema: fit for a CRD', () => {
  it('converts to a JSON schema with descriptions on every property and no unions', () => {
    const json = z.toJSONSchema(ClinicalSuiteSchema.shape.spec, { io: 'input' }) as Record<string, unknown>;
    const undocumented: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (node === null || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      expect(schema).not.toHaveProperty('anyOf');
      expect(schema).not.toHaveProperty('oneOf');
      for (const [key, child] of Object.entries((schema['properties'] ?? {}) as Record<string, unknown>)) {
        if (!(child as Record<string, unknown>)['description']) undocumented.push(`${path}.${key}`);
        walk(child, `${path}.${key}`);
      }
      walk(schema['items'], `${path}[]`);
      if (typeof schema['additionalProperties'] === 'object')
        walk(schema['additionalProperties'], `${path}{}`);
    };
    walk(json, 'spec');
    expect(undocumented).toEqual([]);
  });

  it('uses only patterns without lookaround or backreferences (RE2, as the API server checks them)', () => {
    const patterns = JSON.stringify(z.toJSONSchema(ClinicalSuiteSchema, { io: 'input' })).match(
      /"pattern":"(?:[^"\\]|\\.)*"/g,
    );
    expect(patterns?.length).toBeGreaterThan(5);
    for (const pattern of patterns ?? []) expect(pattern).not.toMatch(/\(\?[=!<]|\\\\[1-9]/);
  });
});

describe('ClinicalSuite schema: env from Secrets and ConfigMaps', () => {
  const secretRef = { secretKeyRef: { name: 'db', key: 'url' } };

  it('takes valueFrom a Secret or ConfigMap key, for service env and model.fetchEnv', () => {
    const parsed = parseSuite(
      suite({
        services: {
          taskAgent: { enabled: true, replicas: 2, env: [{ name: 'DATABASE_URL', valueFrom: secretRef }] },
          medllm: {
            model: {
              fetchEnv: [
                {
                  name: 'HF_TOKEN',
                  valueFrom: { secretKeyRef: { name: 'hf', key: 'token', optional: true } },
                },
                { name: 'HF_ENDPOINT', valueFrom: { configMapKeyRef: { name: 'mirror', key: 'url' } } },
                { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
              ],
            },
          },
        },
      }),
    );
    expect(parsed.spec.services.taskAgent?.env).toEqual([{ name: 'DATABASE_URL', valueFrom: secretRef }]);
    expect(parsed.spec.services.medllm?.model?.fetchEnv).toHaveLength(3);
  });

  it.each([
    [{ name: 'A', value: 'x', valueFrom: secretRef }, 'set value or valueFrom, not both'],
    [{ name: 'A', valueFrom: {} }, 'set exactly one of secretKeyRef and configMapKeyRef'],
    [
      { name: 'A', valueFrom: { ...secretRef, configMapKeyRef: { name: 'c', key: 'k' } } },
      'set exactly one of secretKeyRef and configMapKeyRef',
    ],
    [{ name: 'A', valueFrom: { secretKeyRef: { name: 'db' } } }, 'valueFrom.secretKeyRef.key: required'],
    [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'x' } } }, 'fieldRef'],
  ])('refuses env %j (%s)', (entry, expected) => {
    expect(issuesOf(suite({ services: { llm: { env: [entry] } } })).join('\n')).toContain(expected);
    expect(issuesOf(suite({ services: { llm: { model: { fetchEnv: [entry] } } } })).join('\n')).toContain(
      expected,
    );
  });

  it('takes an entry with neither value nor valueFrom as an empty value, as Kubernetes does', () => {
    const parsed = parseSuite(suite({ services: { llm: { env: [{ name: 'A' }] } } }));
    expect(parsed.spec.services.llm?.env).toEqual([{ name: 'A' }]);
  });

  it('says both in the CRD too (CEL)', () => {
    const crd = JSON.stringify(buildCrd());
    expect(crd).toContain('"rule":"!(has(self.value) && has(self.valueFrom))"');
    expect(crd).toContain('"rule":"has(self.secretKeyRef) != has(self.configMapKeyRef)"');
  });
});
