import { describe, expect, it } from '@jest/globals';
import { parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import {
  boundedName,
  configHash,
  objectName,
  ownedSuite,
  ownerReference,
  stableJson,
} from '../../../operator/src/resources/index.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe('objectName', () => {
  it('is <suite>-<component dir> when it fits', () => {
    expect(objectName({ metadata: { name: 'demo' } }, 'codeSearch')).toBe('demo-codesearch');
    expect(objectName({ metadata: { name: 'demo' } }, 'llm', 'models')).toBe('demo-llm-models');
  });

  it('cuts at 63 characters with a stable hash suffix, still a DNS label', () => {
    const suite = { metadata: { name: 'a'.repeat(60) } };
    const name = objectName(suite, 'patientSim');
    expect(name).toHaveLength(63);
    expect(name).toMatch(DNS_LABEL);
    expect(name.startsWith('a'.repeat(54))).toBe(true);
    expect(name).toMatch(/-[0-9a-f]{8}$/);
    expect(objectName(suite, 'patientSim')).toBe(name);
  });

  it('never gives two long names the same cut name', () => {
    const long = 'x'.repeat(58);
    const names = [
      objectName({ metadata: { name: `${long}-one` } }, 'llm'),
      objectName({ metadata: { name: `${long}-two` } }, 'llm'),
      objectName({ metadata: { name: `${long}-one` } }, 'llm', 'models'),
      objectName({ metadata: { name: `${long}-one` } }, 'agent'),
    ];
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name.length).toBeLessThanOrEqual(63);
  });

  it('does not end the cut part with a dash', () => {
    // The 54th character is a "-": the cut would leave it dangling before the hash.
    const name = boundedName(`${'b'.repeat(53)}-${'c'.repeat(20)}`);
    expect(name).toMatch(DNS_LABEL);
    expect(name).not.toContain('--');
  });

  it('leaves exactly 63 characters alone', () => {
    const name = 'n'.repeat(59);
    expect(boundedName(name, 'llm')).toBe(`${name}-llm`);
  });
});

describe('configHash', () => {
  it('ignores key order, sees every value', () => {
    expect(configHash({ a: '1', b: { c: 2, d: [1, 2] } })).toBe(
      configHash({ b: { d: [1, 2], c: 2 }, a: '1' }),
    );
    expect(configHash({ a: '1' })).not.toBe(configHash({ a: '2' }));
    expect(configHash({ a: [1, 2] })).not.toBe(configHash({ a: [2, 1] }));
    expect(configHash({ a: '1' })).toMatch(/^[0-9a-f]{64}$/);
  });

  it('stableJson sorts nested keys', () => {
    expect(stableJson({ z: 1, a: { y: 2, b: 3 } })).toBe('{"a":{"b":3,"y":2},"z":1}');
  });
});

describe('ownedSuite', () => {
  const raw = { apiVersion: 'clinicalsuite.ai/v1alpha1', kind: 'ClinicalSuite' };

  it('keeps the uid and namespace the API server gave the suite, for its ownerReference', () => {
    const suite = ownedSuite(parseSuite({ ...raw, metadata: { name: 's', namespace: 'ns', uid: 'u-1' } }));
    expect(ownerReference(suite)).toEqual({
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      name: 's',
      uid: 'u-1',
      controller: true,
      blockOwnerDeletion: true,
    });
  });

  it('refuses a suite without a uid', () => {
    expect(() => ownedSuite(parseSuite({ ...raw, metadata: { name: 's', namespace: 'ns' } }))).toThrow(/uid/);
  });
});
