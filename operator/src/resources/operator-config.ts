/**
 * The operator's own configuration (a ConfigMap rendered by the Helm chart, parsed once at start):
 * the resource profiles a spec's `resourceProfile: <name>:<count>` refers to, KubeAI-style, and
 * the few cluster facts the builders need. Parsed with zod like every other edge of the system.
 */
import { z } from 'zod';
import { DNS_SUBDOMAIN, QUANTITY, QUANTITY_HINT } from '../api/v1alpha1/patterns.js';

const quantity = z.string().regex(QUANTITY, { error: QUANTITY_HINT });

/** Per-unit cpu and memory; a profile reference `name:N` multiplies them by N. */
const PerUnitSchema = z
  .strictObject({ cpu: quantity.optional(), memory: quantity.optional() })
  .describe('Per-unit cpu and memory.');

export const TolerationSchema = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.int().optional(),
});

export const ResourceProfileSchema = z
  .strictObject({
    requests: PerUnitSchema.prefault({}),
    limits: PerUnitSchema.prefault({}),
    /** Extended resource name of the accelerator, e.g. `nvidia.com/gpu`; none for CPU profiles. */
    gpuResourceName: z.string().min(1).optional(),
    /** Accelerators per unit; requested and limited alike (extended resources cannot overcommit). */
    gpusPerUnit: z.int().min(1).optional(),
    nodeSelector: z.record(z.string(), z.string()).default({}),
    tolerations: z.array(TolerationSchema).default([]),
    runtimeClassName: z.string().min(1).optional(),
    /** `cuda` runs the image's CUDA variant (tag suffix `-cuda`). */
    imageVariant: z.enum(['cpu', 'cuda']).default('cpu'),
  })
  .refine((p) => (p.gpuResourceName === undefined) === (p.gpusPerUnit === undefined), {
    error: 'gpuResourceName and gpusPerUnit go together',
  });

export type ResourceProfile = z.infer<typeof ResourceProfileSchema>;

const GPU_TOLERATION = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' } as const;
const GPU_PRODUCT_LABEL = 'nvidia.com/gpu.product';

/**
 * The profiles every operator knows. Memory is limited at its request (an OOM kill is clearer
 * than node pressure); CPU is not limited (CFS throttling only adds latency), as in KubeAI.
 * GPU node selectors use the labels of NVIDIA's GPU feature discovery.
 */
export const DEFAULT_RESOURCE_PROFILES: Readonly<Record<string, z.input<typeof ResourceProfileSchema>>> = {
  cpu: { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '2Gi' } },
  'nvidia-gpu': gpuProfile('4', '16Gi', {}),
  'nvidia-gpu-l4': gpuProfile('6', '24Gi', { [GPU_PRODUCT_LABEL]: 'NVIDIA-L4' }),
  'nvidia-gpu-a100': gpuProfile('12', '64Gi', { [GPU_PRODUCT_LABEL]: 'NVIDIA-A100-SXM4-80GB' }),
  'nvidia-gpu-h100': gpuProfile('16', '96Gi', { [GPU_PRODUCT_LABEL]: 'NVIDIA-H100-80GB-HBM3' }),
};

function gpuProfile(cpu: string, memory: string, nodeSelector: Record<string, string>) {
  return {
    requests: { cpu, memory },
    limits: { memory },
    gpuResourceName: 'nvidia.com/gpu',
    gpusPerUnit: 1,
    nodeSelector,
    tolerations: [GPU_TOLERATION],
    runtimeClassName: 'nvidia',
    imageVariant: 'cuda' as const,
  };
}

const PROFILE_NAME = /^[a-z0-9-]+$/;

/** A label key: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The label a Secret's or claim's owner sets (value "true") to let the suites of its namespace use it. */
export const DEFAULT_USABLE_BY_SUITES_LABEL = 'clinicalsuite.ai/usable-by-suites';

/**
 * Which objects of one kind (Secrets, or PersistentVolumeClaims) a ClinicalSuite may make its pods
 * read, beyond those the operator makes for it (resources/references.ts applies it).
 */
export const ReferenceRuleSchema = z.strictObject({
  /** Objects carrying this label with the value "true" are allowed; '' turns the label rule off. */
  label: z
    .union([z.literal(''), z.string().regex(LABEL_KEY, { error: 'must be a label key' })])
    .default(DEFAULT_USABLE_BY_SUITES_LABEL),
  /** Names allowed in every watched namespace whatever their labels; "*" allows every object. */
  names: z
    .array(
      z.union([z.literal('*'), z.string().regex(DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' })]),
    )
    .default([]),
});

export type ReferenceRule = z.infer<typeof ReferenceRuleSchema>;

export const OperatorConfigSchema = z.strictObject({
  /**
   * Profiles by name, merged over {@link DEFAULT_RESOURCE_PROFILES} (a name given here replaces
   * the default of that name; the defaults cannot be removed, so `cpu:1` always resolves).
   */
  resourceProfiles: z
    .record(
      z.string().regex(PROFILE_NAME, { error: 'lowercase letters, digits and "-"' }),
      ResourceProfileSchema,
    )
    .default({})
    .transform((given) => ({ ...parseDefaults(), ...given })),
  /**
   * Who may scrape the services a NetworkPolicy closes when monitoring is on: Prometheus pods
   * (prometheus-operator labels them `app.kubernetes.io/name: prometheus`) in this namespace.
   */
  prometheus: z
    .strictObject({
      namespace: z.string().min(1).default('monitoring'),
      podLabels: z.record(z.string(), z.string()).default({ 'app.kubernetes.io/name': 'prometheus' }),
    })
    .prefault({}),
  /**
   * The Secrets and claims a suite may reference (env `valueFrom.secretKeyRef`, `spec.auth.*`,
   * `model.fetchEnv`, `model.existingClaim`, `storage.existingClaim`): the chart's
   * `allowedSecretRefs` and `allowedClaimRefs` (helm/clinical-suite/README.md, the trust model).
   */
  suiteReferences: z
    .strictObject({
      secrets: ReferenceRuleSchema.prefault({}),
      claims: ReferenceRuleSchema.prefault({}),
    })
    .prefault({}),
});

export type OperatorConfig = z.infer<typeof OperatorConfigSchema>;
export type OperatorConfigInput = z.input<typeof OperatorConfigSchema>;

function parseDefaults(): Record<string, ResourceProfile> {
  return Object.fromEntries(
    Object.entries(DEFAULT_RESOURCE_PROFILES).map(([name, p]) => [name, ResourceProfileSchema.parse(p)]),
  );
}

/** Parses the operator config (e.g. the chart's ConfigMap, YAML already decoded); throws zod's error. */
export function parseOperatorConfig(input: unknown = {}): OperatorConfig {
  return OperatorConfigSchema.parse(input ?? {});
}

/** The config with nothing set: the default profiles and Prometheus in `monitoring`. */
export const DEFAULT_OPERATOR_CONFIG: OperatorConfig = parseOperatorConfig({});
