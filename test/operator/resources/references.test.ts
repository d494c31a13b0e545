/**
 * What a suite's pods read (every Secret and claim their templates name) and whether the suite may
 * name each: what the operator makes for it, what its owner labelled usable by suites, what the
 * operator config lists by name.
 */
import { describe, expect, it } from '@jest/globals';
import {
  buildComponentObjects,
  buildSuiteObjects,
  DEFAULT_OPERATOR_CONFIG,
  judgeReference,
  ownReferences,
  parseOperatorConfig,
  podReferences,
  referenceRule,
  type PodReference,
} from '../../../operator/src/resources/index.js';
import { sample } from './fixtures.js';

const rule = DEFAULT_OPERATOR_CONFIG.suiteReferences.secrets;
const claims = DEFAULT_OPERATOR_CONFIG.suiteReferences.claims;
const secret = (name: string, use = 'env X of container llm'): PodReference => ({
  kind: 'Secret',
  name,
  uses: [use],
});
const MANAGED = { 'app.kubernetes.io/managed-by': 'clinicalsuite-operator' };
const USABLE = { 'clinicalsuite.ai/usable-by-suites': 'true' };

describe('podReferences', () => {
  it("lists every Secret and claim the full sample's pods read, with where", () => {
    const refs = podReferences(buildSuiteObjects(sample('full'), DEFAULT_OPERATOR_CONFIG));
    const byName = Object.fromEntries(refs.map((r) => [`${r.kind}/${r.name}`, r.uses]));
    expect(Object.keys(byName).sort()).toEqual([
      'PersistentVolumeClaim/face-models',
      'PersistentVolumeClaim/full-codesearch-models',
      'PersistentVolumeClaim/full-face-data',
      'PersistentVolumeClaim/full-llm-models',
      'PersistentVolumeClaim/full-medllm-models',
      'PersistentVolumeClaim/full-stt-models',
      'PersistentVolumeClaim/full-tts-models',
      // The llm's, agent's and task agent's tokens have explicit refs there; the other services'
      // come from the generated full-auth.
      'Secret/clinicalsuite-tokens',
      'Secret/full-auth',
      'Secret/task-agent-db',
      'Secret/task-proxy-users',
    ]);
    expect(byName['Secret/task-agent-db']).toEqual([
      'env DATABASE_URL of container task-agent',
      'env DATABASE_URL of container task-proxy',
    ]);
    expect(byName['Secret/task-proxy-users']).toEqual(['volume users']);
    expect(byName['PersistentVolumeClaim/face-models']).toEqual(['volume models']);
  });

  it("lists a model-fetch init container's Secret", () => {
    const refs = podReferences(buildComponentObjects(sample('gpu'), 'medllm', DEFAULT_OPERATOR_CONFIG));
    expect(refs).toContainEqual({
      kind: 'Secret',
      name: 'hf-token',
      uses: ['env HF_TOKEN of container fetch-model', 'env HF_TOKEN of container fetch-projector'],
    });
  });
});

describe('ownReferences', () => {
  it("is the suite's auth and env Secrets and the component's own claims, not an existingClaim", () => {
    const full = sample('full');
    expect([...ownReferences(full, 'face')].sort()).toEqual([
      'PersistentVolumeClaim/full-face-data',
      'Secret/full-auth',
      'Secret/full-env-secrets',
    ]);
    expect([...ownReferences(full, 'llm')]).toContain('PersistentVolumeClaim/full-llm-models');
  });
});

describe('judgeReference', () => {
  it('allows a Secret its owner labelled usable by suites, refuses one without the label, naming it and the rule', () => {
    expect(judgeReference(secret('db'), { labels: USABLE }, rule, false)).toEqual({ allowed: true });
    expect(
      judgeReference(secret('db'), { labels: { 'clinicalsuite.ai/usable-by-suites': 'yes' } }, rule, false),
    ).toMatchObject({
      allowed: false,
    });
    expect(
      judgeReference(secret('db', 'env DATABASE_URL of container face'), { labels: {} }, rule, false),
    ).toEqual({
      allowed: false,
      message:
        "Secret db (env DATABASE_URL of container face) is not allowed: a suite's pods may read only the " +
        'Secrets the operator makes for the suite, Secrets labelled clinicalsuite.ai/usable-by-suites=true ' +
        "and none listed in the operator's allowedSecretRefs.names",
    });
    expect(judgeReference(secret('db'), undefined, rule, false)).toMatchObject({
      allowed: false,
      message: expect.stringContaining('is not allowed (it does not exist): '),
    });
  });

  it("refuses another suite's generated Secret, allows one made for this suite: made by the operator is not enough", () => {
    const other = { labels: { ...MANAGED, 'app.kubernetes.io/instance': 'other' } };
    expect(judgeReference(secret('other-auth'), other, rule, false, 'demo').allowed).toBe(false);
    expect(judgeReference(secret('other-auth'), { labels: MANAGED }, rule, false, 'demo').allowed).toBe(
      false,
    );
    // One it made for this suite, whatever its name (a Secret a later builder makes).
    const mine = { labels: { ...MANAGED, 'app.kubernetes.io/instance': 'demo' } };
    expect(judgeReference(secret('demo-llm-tokens'), mine, rule, false, 'demo')).toEqual({ allowed: true });
  });

  it('allows what the operator makes for the suite, unless an object of that name exists that it did not make', () => {
    const claim: PodReference = {
      kind: 'PersistentVolumeClaim',
      name: 'demo-llm-models',
      uses: ['volume models'],
    };
    expect(judgeReference(claim, undefined, claims, true)).toEqual({ allowed: true });
    expect(judgeReference(claim, { labels: MANAGED }, claims, true)).toEqual({ allowed: true });
    expect(judgeReference(claim, { labels: { app: 'records' } }, claims, true)).toEqual({
      allowed: false,
      message: expect.stringMatching(
        /^PersistentVolumeClaim demo-llm-models \(volume models\) is not allowed: the operator would make it for this suite, but an object of that name exists that it did not make/,
      ),
    });
    expect(judgeReference(claim, { labels: { app: 'records', ...USABLE } }, claims, true)).toEqual({
      allowed: true,
    });
  });

  it('follows the operator config: names listed, "*", another label, the label rule off', () => {
    const config = parseOperatorConfig({
      suiteReferences: {
        secrets: { names: ['shared-db'], label: 'example.org/suites' },
        claims: { names: ['*'] },
      },
    });
    const secrets = referenceRule(config, 'Secret');
    expect(judgeReference(secret('shared-db'), undefined, secrets, false)).toEqual({ allowed: true });
    expect(
      judgeReference(secret('db'), { labels: { 'example.org/suites': 'true' } }, secrets, false),
    ).toEqual({
      allowed: true,
    });
    expect(judgeReference(secret('db'), { labels: USABLE }, secrets, false)).toMatchObject({
      allowed: false,
      message: expect.stringContaining(
        "Secrets labelled example.org/suites=true and those the operator's allowedSecretRefs.names lists (shared-db)",
      ),
    });
    const anyClaim: PodReference = { kind: 'PersistentVolumeClaim', name: 'x', uses: ['volume data'] };
    expect(
      judgeReference(anyClaim, undefined, referenceRule(config, 'PersistentVolumeClaim'), false),
    ).toEqual({
      allowed: true,
    });
    const off = parseOperatorConfig({ suiteReferences: { secrets: { label: '' } } }).suiteReferences.secrets;
    expect(judgeReference(secret('db'), { labels: USABLE }, off, false)).toMatchObject({ allowed: false });
    expect(() => parseOperatorConfig({ suiteReferences: { secrets: { names: ['Not_A_Name'] } } })).toThrow(
      'must be a DNS subdomain name',
    );
  });
});
