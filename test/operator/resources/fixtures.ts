/** Suites for the builder tests: the samples and small inline specs, as the API server would hand them over. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { parseSuite } from '../../../operator/src/api/v1alpha1/index.js';
import type { KubeObject, OwnedSuite } from '../../../operator/src/resources/index.js';

export const NAMESPACE = 'clinical';
export const UID = '3f1c2a9e-0000-4000-8000-000000000001';

export const samplesDir = fileURLToPath(new URL('../../../crds/samples/', import.meta.url));
export const goldenDir = fileURLToPath(new URL('../../golden/', import.meta.url));

/** A parsed suite with the namespace and uid the API server would have given it. */
export function owned(input: unknown, metadata: { namespace?: string; uid?: string } = {}): OwnedSuite {
  const suite = parseSuite(input);
  return {
    ...suite,
    metadata: { ...suite.metadata, namespace: metadata.namespace ?? NAMESPACE, uid: metadata.uid ?? UID },
  };
}

export function sample(name: string): OwnedSuite {
  return owned(parse(readFileSync(`${samplesDir}${name}.yaml`, 'utf8')));
}

/** A suite named `name` with the given `spec.services` (and other spec fields). */
export function suiteWith(
  services: Record<string, unknown>,
  spec: Record<string, unknown> = {},
  name = 'demo',
): OwnedSuite {
  return owned({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name },
    spec: { ...spec, services },
  });
}

/** A multi-document YAML stream, one document per object. */
export function toYaml(objects: readonly KubeObject[], header: string): string {
  return `# ${header}\n${objects.map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join('')}`;
}
