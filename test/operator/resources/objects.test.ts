/** Invariants of every object the builders render: ownership, selectors, names, purity, order. */
import { describe, expect, it } from '@jest/globals';
import { LABEL_VERSION } from '../../../operator/src/api/v1alpha1/index.js';
import {
  ANNOTATION_RESOURCE_POLICY,
  buildComponentObjects,
  buildSuiteObjects,
  componentsInRolloutOrder,
  DEFAULT_OPERATOR_CONFIG,
  type KubeObject,
} from '../../../operator/src/resources/index.js';
import { sample, suiteWith, UID } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;
const SAMPLES = ['minimal-cpu', 'gpu', 'full'].map((name) => [name, sample(name)] as const);

/** Every selector an object carries. */
function selectors(o: KubeObject): Record<string, string>[] {
  switch (o.kind) {
    case 'Deployment':
    case 'PodDisruptionBudget':
    case 'ServiceMonitor':
      return [o.spec.selector.matchLabels];
    case 'Service':
      return [o.spec.selector];
    case 'NetworkPolicy':
      return [
        o.spec.podSelector.matchLabels,
        ...o.spec.ingress.flatMap((r) => r.from.map((f) => f.podSelector.matchLabels)),
      ];
    default:
      return [];
  }
}

describe.each(SAMPLES)('objects of %s', (_name, suite) => {
  const objects = buildSuiteObjects(suite, config);

  it('each carry exactly one controller ownerReference to the suite, but retained PVCs none', () => {
    for (const o of objects) {
      const refs = o.metadata.ownerReferences ?? [];
      const retained = o.metadata.annotations?.[ANNOTATION_RESOURCE_POLICY] === 'keep';
      expect(refs.filter((r) => r.controller)).toHaveLength(retained ? 0 : 1);
      if (!retained)
        expect(refs[0]).toMatchObject({ uid: UID, kind: 'ClinicalSuite', name: suite.metadata.name });
      // Model PVCs are retained with retainModels; data PVCs by default (no sample turns it off).
      if (o.kind === 'PersistentVolumeClaim')
        expect(retained).toBe(o.metadata.name.endsWith('-data') || suite.spec.retainModels);
      else expect(retained).toBe(false);
    }
  });

  it('have selectors without a version label, matching their pods', () => {
    for (const o of objects) for (const s of selectors(o)) expect(s).not.toHaveProperty([LABEL_VERSION]);
    for (const d of objects.filter((o) => o.kind === 'Deployment')) {
      expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
      expect(d.spec.template.metadata.labels).toHaveProperty([LABEL_VERSION]);
    }
  });

  it('have unique kind/name pairs and names that are DNS labels', () => {
    const keys = objects.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const o of objects) expect(o.metadata.name).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  });

  it('are deterministic: two builds deep-equal', () => {
    expect(buildSuiteObjects(suite, config)).toEqual(objects);
  });

  it('never read process.env', () => {
    const saved = process.env;
    const trap = () => {
      throw new Error('a builder read process.env');
    };
    process.env = new Proxy({}, { get: trap, has: trap, ownKeys: trap, getOwnPropertyDescriptor: trap });
    let rebuilt: KubeObject[];
    try {
      rebuilt = buildSuiteObjects(suite, config);
    } finally {
      process.env = saved;
    }
    expect(rebuilt).toEqual(objects);
  });
});

describe('buildSuiteObjects', () => {
  it('renders nothing for a disabled or absent service', () => {
    const suite = suiteWith({ llm: { enabled: true }, stt: { enabled: false } });
    const names = buildSuiteObjects(suite, config).map((o) => o.metadata.name);
    expect(names.some((n) => n.includes('stt') || n.includes('agent'))).toBe(false);
    expect(buildSuiteObjects(suiteWith({ stt: { enabled: false } }), config)).toEqual([]);
  });

  it('lists components in dependency order, each as ConfigMap, PVC, Service, Deployment, …', () => {
    const suite = sample('full');
    expect(componentsInRolloutOrder(suite).indexOf('llm')).toBeLessThan(
      componentsInRolloutOrder(suite).indexOf('agent'),
    );
    expect(buildComponentObjects(suite, 'llm', config).map((o) => o.kind)).toEqual([
      'ConfigMap',
      'PersistentVolumeClaim',
      'Service',
      'Deployment',
      'PodDisruptionBudget',
      'ServiceMonitor',
    ]);
  });
});
