/**
 * The owned-object watches: an event on any object the operator creates maps to its owner suite's
 * key (its controller ownerReference, else its instance label), so a deleted Service wakes the
 * suite that re-creates it.
 */
import { describe, expect, it } from '@jest/globals';
import { ownerKey, WATCHED_KINDS } from '../../../operator/src/k8s/watch.js';

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

  it('watches every kind the operator creates but ServiceMonitors (optional CRD; the resync covers them)', () => {
    expect(WATCHED_KINDS.map((k) => k.resource).sort()).toEqual([
      'configmaps',
      'deployments',
      'networkpolicies',
      'persistentvolumeclaims',
      'poddisruptionbudgets',
      'pods',
      'secrets',
      'services',
    ]);
  });
});
