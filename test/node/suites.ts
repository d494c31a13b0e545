/**
 * The ClinicalSuites the real-node run applies with kubectl. The main one is the CPU suite of the
 * local runner's small real models (the llm's Qwen2.5-Coder 1.5B, face's ONNX models, code
 * search's ICD-10 data and MiniLM), fetched by the operator's init containers from the host's model
 * mirror (mirror.ts) with MODEL_MIRROR in each service's `model.fetchEnv`.
 */
import { stringify } from 'yaml';

export const NAMESPACE = 'clinical';
export const SUITE = 'e2e';
export const IMAGE = { registry: 'localhost', repository: 'clinicalsuite', tag: 'dev' } as const;
export const IMAGE_REF = `${IMAGE.registry}/${IMAGE.repository}:${IMAGE.tag}`;

const fetchEnv = (mirror: string) => [{ name: 'MODEL_MIRROR', value: mirror }];

export function mainSuite(mirror: string): string {
  return stringify({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name: SUITE, namespace: NAMESPACE },
    spec: {
      image: { ...IMAGE, pullPolicy: 'IfNotPresent' },
      defaultResourceProfile: 'cpu:1',
      networkPolicy: { enabled: true },
      // Prometheus (a pod in `monitoring`) is let through the NetworkPolicies; no ServiceMonitor
      // CRD here, so it finds the pods with kubernetes_sd_configs.
      monitoring: { serviceMonitor: true },
      services: {
        llm: {
          enabled: true,
          resourceProfile: 'cpu:1',
          concurrency: 1,
          model: { fetchEnv: fetchEnv(mirror) },
        },
        agent: { enabled: true },
        // Face wants a GPU by default; this node has none.
        face: { enabled: true, resourceProfile: 'cpu:1', model: { fetchEnv: fetchEnv(mirror) } },
        taskProxy: { enabled: true },
        taskAgent: { enabled: true },
        codeSearch: { enabled: true, model: { fetchEnv: fetchEnv(mirror) } },
        ocr: { enabled: true },
      },
    },
  });
}

/** A one-service suite (OCR: no model, starts in seconds) with `service` merged into its spec. */
export function ocrSuite(
  name: string,
  namespace: string,
  spec: Record<string, unknown> = {},
  service = {},
): string {
  return stringify({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name, namespace },
    spec: {
      image: { ...IMAGE, pullPolicy: 'IfNotPresent' },
      defaultResourceProfile: 'cpu:1',
      ...spec,
      services: { ocr: { enabled: true, ...service } },
    },
  });
}
