/**
 * The owned-object watches: an event on any object the operator creates maps to its owner suite's
 * key (its controller ownerReference, else its instance label), so a deleted Service wakes the
 * suite that re-creates it.
 */
import { describe, expect, it } from '@jest/globals';
import { ownerKey, parseWatchNamespaces, WATCHED_KINDS, watchPath } from '../../../operator/src/k8s/watch.js';

describe('ownerKey', () => {
  it("maps an owned object to its controller owner's key", () => {
    expect(
      ownerKey({
        metadata: {
          name: 'a-task-agent',
          namespace: 'clinical',
          labels: { 'app.kubernetes.io/instance': 'a' },
          ownerReferences: [
            {
              apiVersion: 'clinicalsuite.ai/v1alpha1',
              kind: 'ClinicalSuite',
              name: 'a',
              controller: true,
            },
          ],
        },
      }),
    ).toBe('clinical/a');
  });

  it('falls back to the instance label (a retained claim, a pod) and ignores objects without either', () => {
    expect(
      ownerKey({
        metadata: { name: 'p', namespace: 'ns', labels: { 'app.kubernetes.io/instance': 'clinic' } },
      }),
    ).toBe('ns/clinic');
    expect(ownerKey({ metadata: { name: 'x', namespace: 'ns' } })).toBeUndefined();
    expect(ownerKey({ metadata: { name: 'x' } })).toBeUndefined();
  });

  it('watches every kind the operator creates but ServiceMonitors (optional CRD) and Secrets (never listed)', () => {
    expect(WATCHED_KINDS.map((k) => k.resource).sort()).toEqual([
      'configmaps',
      'deployments',
      'networkpolicies',
      'persistentvolumeclaims',
      'poddisruptionbudgets',
      'pods',
      'services',
    ]);
  });
});

describe('the watch scope', () => {
  it('parses WATCH_NAMESPACES: "*" for every namespace, else a list of namespace names', () => {
    expect(parseWatchNamespaces('*')).toEqual({ all: true });
    expect(parseWatchNamespaces(' clinical , research,clinical ')).toEqual({
      all: false,
      namespaces: ['clinical', 'research'],
    });
    expect(() => parseWatchNamespaces('*,clinical')).toThrow('"*" (every namespace) cannot be combined');
    expect(() => parseWatchNamespaces('Clinical')).toThrow('"Clinical" is not a namespace name');
    expect(() => parseWatchNamespaces(' , ')).toThrow('give "*" or at least one namespace');
  });

  it('lists and watches a kind in one namespace, or across the cluster', () => {
    expect(watchPath('apps/v1', 'deployments', 'clinical')).toBe(
      '/apis/apps/v1/namespaces/clinical/deployments',
    );
    expect(watchPath('v1', 'pods', 'clinical')).toBe('/api/v1/namespaces/clinical/pods');
    expect(watchPath('clinicalsuite.ai/v1alpha1', 'clinicalsuites')).toBe(
      '/apis/clinicalsuite.ai/v1alpha1/clinicalsuites',
    );
  });
});
