/**
 * `spec` of the ClinicalSuite resource: the source of truth for the CRD (generated from it), the
 * operator and the local runner. Kept expressible as an OpenAPI v3 structural schema: objects
 * with fixed keys, enums, patterns RE2 accepts, `.default()` on leaves and `.prefault({})` on
 * objects (the CRD's `default: {}` idiom, so nested defaults apply).
 */
import { z } from 'zod';
import { COMPONENT_KEYS, COMPONENTS, type ComponentKey } from './components.js';
import {
  DEFAULT_GPU_RESOURCE_PROFILE,
  DEFAULT_IMAGE_REGISTRY,
  DEFAULT_IMAGE_REPOSITORY,
  DEFAULT_IMAGE_TAG,
  DEFAULT_RESOURCE_PROFILE,
} from './constants.js';
import { dependencyIssues } from './dependencies.js';
import * as p from './patterns.js';

export const ComponentKeySchema = z.enum(COMPONENT_KEYS).describe('A component: a key of spec.services.');

const resourceProfile = z
  .string()
  .regex(p.RESOURCE_PROFILE, { error: 'must look like <profile>:<count>, e.g. nvidia-gpu-l4:1 or cpu:2' });

const quantityMap = z.record(z.string(), z.string().regex(p.QUANTITY, { error: p.QUANTITY_HINT }));

export const ResourceRequirementsSchema = z
  .strictObject({
    requests: quantityMap.optional().describe('Minimum resources, e.g. {cpu: "2", memory: 8Gi}.'),
    limits: quantityMap.optional().describe('Maximum resources, e.g. {memory: 12Gi, nvidia.com/gpu: "1"}.'),
  })
  .describe('Explicit container resources, used instead of a resource profile.');

const modelSource = z
  .string()
  .regex(p.MODEL_SOURCE, { error: 'must be a URI with scheme https://, hf://, file:// or pip://' });

const modelFile = z
  .string()
  .regex(p.RELATIVE_PATH, { error: 'must be a relative path of letters, digits, ".", "_", "-" and "/"' })
  .refine((file) => !file.split('/').some((part) => part === '.' || part === '..'), {
    error: 'must not contain "." or ".." segments',
  });

const sha256 = z.string().regex(p.SHA256, { error: 'must be 64 lowercase hex digits' });

/** Env vars the runtime owns: the address the service listens on must be the one others are told. */
export const RESERVED_ENV: readonly string[] = ['PORT', 'HOST'];

/** The name of a Secret or ConfigMap, and a key in it: the two fields of every reference to one. */
const refName = () => z.string().regex(p.DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' });
const refKey = (kind: 'Secret' | 'ConfigMap') =>
  z.string().regex(p.SECRET_KEY, { error: `must be a valid ${kind} key` });

const keyRef = (kind: 'Secret' | 'ConfigMap') =>
  z
    .strictObject({
      name: refName().describe(`${kind} name, in the suite's namespace.`),
      key: refKey(kind).describe(`Key in the ${kind}.`),
      optional: z
        .boolean()
        .optional()
        .describe(`Start the container even when the ${kind} or the key is missing (the variable is unset).`),
    })
    .describe(
      `A key of a ${kind}, as Kubernetes' ${kind === 'Secret' ? 'secretKeyRef' : 'configMapKeyRef'}.`,
    );

const ONE_KEY_REF = 'set exactly one of secretKeyRef and configMapKeyRef';
const ONE_VALUE = 'set value or valueFrom, not both';

export const EnvVarSourceSchema = z
  .strictObject({
    secretKeyRef: keyRef('Secret').optional(),
    configMapKeyRef: keyRef('ConfigMap').optional(),
  })
  .refine((v) => (v.secretKeyRef === undefined) !== (v.configMapKeyRef === undefined), { error: ONE_KEY_REF })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)', message: ONE_KEY_REF },
    ],
  })
  .describe(
    "Where the value comes from, read by the kubelet when the pod starts (a Secret's or ConfigMap's " +
      "key in the suite's namespace): it is set on the container and never copied into a ConfigMap. " +
      'A change of the Secret reaches running pods when they restart. On Kubernetes a Secret must be ' +
      'one its owner labelled clinicalsuite.ai/usable-by-suites=true (or one the operator allows by ' +
      'name), else the service is not run (ReferenceNotAllowed).',
  );

const envVarName = z
  .string()
  .regex(p.ENV_NAME, { error: 'must be letters, digits and "_", not starting with a digit' });

function envVarSchema(reserved: readonly string[], what: string) {
  const reservedRules =
    reserved.length === 0
      ? []
      : [
          {
            rule: `!(self.name in [${reserved.map((n) => `'${n}'`).join(', ')}])`,
            message: `${reserved.join(' and ')} are set by the suite`,
          },
        ];
  return z
    .strictObject({
      name: (reserved.length === 0
        ? envVarName
        : envVarName.refine((name) => !reserved.includes(name), {
            error: `${reserved.join(' and ')} are set by the suite`,
          })
      ).describe(
        reserved.length === 0
          ? 'Variable name.'
          : `Variable name; not ${reserved.join(' or ')}, which the suite sets.`,
      ),
      value: z
        .string()
        .optional()
        .describe(
          'Variable value, empty when neither it nor valueFrom is set. Plain text: put secrets in valueFrom. ' +
            'On Kubernetes a value that holds a credential (DATABASE_URL, a name ending in _PASSWORD, ' +
            '_TOKEN, _SECRET, _API_KEY …, a URL with a password) is moved into the Secret ' +
            '<suite>-env-secrets, never into a ConfigMap, with a PlainCredential warning.',
        ),
      valueFrom: EnvVarSourceSchema.optional(),
    })
    .refine((e) => e.value === undefined || e.valueFrom === undefined, { error: ONE_VALUE })
    .meta({
      'x-kubernetes-validations': [
        ...reservedRules,
        { rule: '!(has(self.value) && has(self.valueFrom))', message: ONE_VALUE },
      ],
    })
    .describe(what);
}

export const EnvVarSchema = envVarSchema(
  RESERVED_ENV,
  'An environment variable, a value or a reference to a Secret or ConfigMap key; it wins over the ' +
    'variables the suite sets (but PORT and HOST).',
);

/** An env var of the model-fetch init containers (HF_TOKEN, HF_ENDPOINT, MODEL_MIRROR, HTTPS_PROXY …). */
export const FetchEnvVarSchema = envVarSchema(
  [],
  'An environment variable of the model-fetch init containers, a value or a reference to a Secret ' +
    'or ConfigMap key.',
);

/** Components whose model has a multimodal projector (a `projectorEnv` in the catalogue). */
export const PROJECTOR_COMPONENTS: readonly ComponentKey[] = COMPONENT_KEYS.filter(
  (key) => COMPONENTS[key].projectorEnv !== undefined,
);

const PROJECTOR_NEEDS_SOURCE_OR_FILE = 'projector needs a source or a file';
const PROJECTOR_NEEDS_MODEL =
  'projector goes with a model on the model volume: set model.source, model.file or model.existingClaim too';

/**
 * A multimodal model's second file: llama.cpp's vision projector (mmproj GGUF), as MedGemma's
 * GGUF conversions ship it beside the language model. One more file in the same volume, fetched
 * by the same idempotent init step, named to the service by its own env var.
 */
export const ProjectorSpecSchema = z
  .strictObject({
    source: modelSource
      .optional()
      .describe(
        'Where the model store fetches the projector from (same schemes as model.source), e.g. ' +
          'hf://<org>/<repo>/mmproj-<model>-f16.gguf.',
      ),
    file: modelFile
      .optional()
      .describe(
        "Path of the projector file under the component's model directory; defaults to the source's base " +
          'name. Without a source the file must already be on the volume (an existingClaim, say).',
      ),
    sha256: sha256
      .optional()
      .describe('Expected SHA-256 of the projector file; a file that does not match is rejected.'),
  })
  .refine((m) => m.source !== undefined || m.file !== undefined, { error: PROJECTOR_NEEDS_SOURCE_OR_FILE })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.source) || has(self.file)', message: PROJECTOR_NEEDS_SOURCE_OR_FILE },
    ],
  })
  .describe(
    "The model's multimodal projector (llama.cpp's mmproj GGUF, which must come from the same " +
      "conversion as the model), fetched into the model volume beside it and passed as the service's " +
      `projector variable (medllm: MMPROJ_PATH). Only for ${PROJECTOR_COMPONENTS.join(', ')}.`,
  );

export const ModelSpecSchema = z
  .strictObject({
    source: modelSource
      .optional()
      .describe(
        'Where the model store fetches the model from: https://…, hf://<org>/<repo>/<file>, file:///<path> ' +
          "or pip://<package>. Replaces the sources of the component's default model in the model manifest.",
      ),
    file: modelFile
      .optional()
      .describe(
        "Path of the model file under the component's model directory; defaults to the source's base name " +
          "or the manifest's file.",
      ),
    sha256: sha256
      .optional()
      .describe('Expected SHA-256 of the model file; a file that does not match is rejected.'),
    size: z
      .string()
      .regex(p.QUANTITY, { error: p.QUANTITY_HINT })
      .optional()
      .describe('Size of the model volume to request, e.g. 8Gi.'),
    storageClass: z
      .string()
      .regex(p.DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' })
      .optional()
      .describe("Storage class of the model volume; the cluster's default when unset."),
    accessMode: z
      .enum(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany'])
      .default('ReadWriteOnce')
      .describe('Access mode of the model volume; ReadOnlyMany or ReadWriteMany to share it between nodes.'),
    existingClaim: z
      .string()
      .regex(p.DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' })
      .optional()
      .describe(
        'Use this PersistentVolumeClaim (already holding the model) instead of creating one. On ' +
          'Kubernetes it must be labelled clinicalsuite.ai/usable-by-suites=true by its owner (or allowed ' +
          'by name in the operator config), else the service is not run (ReferenceNotAllowed).',
      ),
    projector: ProjectorSpecSchema.optional(),
    fetchEnv: z
      .array(FetchEnvVarSchema)
      .max(32)
      .refine((env) => new Set(env.map((e) => e.name)).size === env.length, { error: 'names must be unique' })
      .optional()
      .describe(
        'Environment of the init containers that fetch the model (Kubernetes only; the local runner ' +
          'fetches with its own environment): HF_TOKEN from a Secret for a gated hf:// model, HF_ENDPOINT, ' +
          'MODEL_MIRROR (an HTTP server holding catalogue models), HTTPS_PROXY … Never given to the ' +
          'service itself.',
      ),
  })
  .refine((m) => m.existingClaim === undefined || (m.storageClass === undefined && m.size === undefined), {
    error: 'existingClaim cannot be combined with storageClass or size',
    path: ['existingClaim'],
  })
  .refine(
    (m) =>
      m.projector === undefined ||
      m.source !== undefined ||
      m.file !== undefined ||
      m.existingClaim !== undefined,
    { error: PROJECTOR_NEEDS_MODEL, path: ['projector'] },
  )
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!has(self.existingClaim) || (!has(self.storageClass) && !has(self.size))',
        message: 'existingClaim cannot be combined with storageClass or size',
      },
      {
        rule: '!has(self.projector) || has(self.source) || has(self.file) || has(self.existingClaim)',
        message: PROJECTOR_NEEDS_MODEL,
      },
    ],
  })
  .describe("The component's model: where it comes from and the volume that holds it.");

/** Size of a data volume when `storage.size` is unset: a registry or task database, not models. */
export const DEFAULT_DATA_VOLUME_SIZE = '1Gi';

/** Components with an embedded store (a `sharedStoreEnv` in the catalogue), in catalogue order. */
export const EMBEDDED_STORE_COMPONENTS: readonly ComponentKey[] = COMPONENT_KEYS.filter(
  (key) => COMPONENTS[key].sharedStoreEnv !== undefined,
);

export const DataStorageSchema = z
  .strictObject({
    size: z
      .string()
      .regex(p.QUANTITY, { error: p.QUANTITY_HINT })
      .optional()
      .describe(
        `Size of the data volume to request; ${DEFAULT_DATA_VOLUME_SIZE} when unset. Once the claim exists it ` +
          'can only grow, and only where its storage class allows volume expansion.',
      ),
    storageClass: z
      .string()
      .regex(p.DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' })
      .optional()
      .describe(
        "Storage class of the data volume; the cluster's default when unset. Fixed once the claim exists.",
      ),
    existingClaim: z
      .string()
      .regex(p.DNS_SUBDOMAIN, { error: 'must be a DNS subdomain name' })
      .optional()
      .describe(
        'Mount this PersistentVolumeClaim as the data directory instead of creating one; the operator ' +
          'never changes or deletes it. It must be labelled clinicalsuite.ai/usable-by-suites=true by its ' +
          'owner (or allowed by name in the operator config), else the service is not run.',
      ),
    retainOnDelete: z
      .boolean()
      .default(true)
      .describe(
        'Keep the data volume when the ClinicalSuite is deleted. true (the default): the claim ' +
          '<suite>-<service dir>-data carries no ownerReference (and the annotation ' +
          'clinicalsuite.ai/resource-policy: keep), so deleting the suite leaves it and its data, and a ' +
          'suite of the same name mounts it again; delete the claim yourself to drop the data. false: ' +
          'garbage collection deletes it with the suite. Either way, disabling the service or setting ' +
          'DATABASE_URL never deletes it.',
      ),
  })
  .refine((s) => s.existingClaim === undefined || (s.storageClass === undefined && s.size === undefined), {
    error: 'existingClaim cannot be combined with storageClass or size',
    path: ['existingClaim'],
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!has(self.existingClaim) || (!has(self.storageClass) && !has(self.size))',
        message: 'existingClaim cannot be combined with storageClass or size',
      },
    ],
  })
  .describe(
    `The persistent volume of the data directory (/data) of a component with an embedded store ` +
      `(${EMBEDDED_STORE_COMPONENTS.join(', ')}: the face registry, the task database). While the ` +
      "service's env sets no DATABASE_URL the operator mounts a ReadWriteOnce PersistentVolumeClaim " +
      '<suite>-<service dir>-data there (or existingClaim) and replaces pods with the Recreate strategy, ' +
      'so no data is lost when a pod restarts and no two pods open the database at once. With ' +
      'DATABASE_URL the store is shared, /data is an emptyDir and this is unused. Kubernetes only: the ' +
      'local runner keeps data under its home directory.',
  );

const serviceValidations = [
  {
    rule: '!(has(self.resourceProfile) && has(self.resources))',
    message: 'set either resourceProfile or resources, not both',
  },
];

/** Components with a per-replica store: more than one replica needs the shared store's env var. */
function sharedStoreValidations(env: string | undefined) {
  if (env === undefined) return [];
  return [
    {
      rule: `!(has(self.replicas) && self.replicas > 1) || (has(self.env) && self.env.exists(e, e.name == '${env}'))`,
      message: `more than one replica needs env ${env} (a shared database): each replica would otherwise keep its own store`,
    },
  ];
}

/** Components without an embedded store have no data volume to configure. */
function storageValidations(hasStore: boolean, key: ComponentKey) {
  if (hasStore) return [];
  return [{ rule: '!has(self.storage)', message: storageMessage(key) }];
}

function storageMessage(key: ComponentKey): string {
  return (
    `${key} keeps no data of its own: storage is only for components with an embedded store ` +
    `(${EMBEDDED_STORE_COMPONENTS.join(', ')})`
  );
}

/** Components whose model is one file have no projector to configure. */
function projectorValidations(hasProjector: boolean, key: ComponentKey) {
  if (hasProjector) return [];
  return [{ rule: '!has(self.model) || !has(self.model.projector)', message: projectorMessage(key) }];
}

function projectorMessage(key: ComponentKey): string {
  return (
    `${key} takes no multimodal projector: model.projector is only for ` +
    `${PROJECTOR_COMPONENTS.join(', ')} (a llama.cpp mmproj GGUF beside the model)`
  );
}

/** The schema of `spec.services.<key>`: identical for every component but for its defaults. */
export function serviceSpecSchema(key: ComponentKey) {
  const c = COMPONENTS[key];
  const shared = c.sharedStoreEnv;
  return z
    .strictObject({
      enabled: z.boolean().default(false).describe(`Run the ${c.title} service.`),
      replicas: z
        .int()
        .min(0)
        .default(1)
        .describe('Number of pods (the local runner always runs one process).'),
      resourceProfile: resourceProfile
        .optional()
        .describe(
          '<profile>:<count> from the operator config (GPU resource and count, node selector, tolerations, ' +
            `runtime class). Defaults to spec.${c.gpu ? 'defaultGpuResourceProfile' : 'defaultResourceProfile'}.`,
        ),
      resources: ResourceRequirementsSchema.optional(),
      concurrency: z
        .int()
        .min(1)
        .max(1024)
        .default(c.concurrency)
        .describe('Requests the service processes at once; it queues or rejects the rest.'),
      queueSize: z
        .int()
        .min(0)
        .max(100_000)
        .optional()
        .describe(
          "Requests that may wait for a slot before the service answers 503; the service's default when unset.",
        ),
      requestTimeoutSeconds: z
        .int()
        .min(1)
        .max(86_400)
        .optional()
        .describe("Seconds before a request is abandoned; the service's default when unset."),
      model: ModelSpecSchema.optional(),
      storage: DataStorageSchema.optional(),
      env: z
        .array(EnvVarSchema)
        .max(128)
        .refine((env) => new Set(env.map((e) => e.name)).size === env.length, {
          error: 'names must be unique',
        })
        .default([])
        .describe('Extra environment variables.'),
      dependsOn: z
        .array(ComponentKeySchema)
        .max(COMPONENT_KEYS.length)
        .optional()
        .describe(
          'Components this one calls and starts after; each must be enabled. ' +
            `Defaults to the enabled ones of: ${c.dependsOn.length ? c.dependsOn.join(', ') : '(none)'}.`,
        ),
    })
    .refine((s) => s.resourceProfile === undefined || s.resources === undefined, {
      error: 'set either resourceProfile or resources, not both',
      path: ['resources'],
    })
    .refine((s) => shared === undefined || s.replicas <= 1 || s.env.some((e) => e.name === shared), {
      error: `more than one replica needs env ${shared ?? ''} (a shared database): each replica would otherwise keep its own store`,
      path: ['replicas'],
    })
    .refine((s) => shared !== undefined || s.storage === undefined, {
      error: storageMessage(key),
      path: ['storage'],
    })
    .refine((s) => c.projectorEnv !== undefined || s.model?.projector === undefined, {
      error: projectorMessage(key),
      path: ['model', 'projector'],
    })
    .meta({
      'x-kubernetes-validations': [
        ...serviceValidations,
        ...sharedStoreValidations(shared),
        ...storageValidations(shared !== undefined, key),
        ...projectorValidations(c.projectorEnv !== undefined, key),
      ],
    })
    .describe(`${c.title}: ${c.description}`);
}

export const ServicesSchema = z
  .strictObject(
    Object.fromEntries(COMPONENT_KEYS.map((key) => [key, serviceSpecSchema(key).optional()])) as {
      [K in ComponentKey]: z.ZodOptional<ReturnType<typeof serviceSpecSchema>>;
    },
  )
  .describe('The services of the suite, one optional entry per component.');

const secretKeyRef = (what: string, defaultKey = 'token') =>
  z
    .strictObject({
      name: refName().describe('Secret name.'),
      key: refKey('Secret').default(defaultKey).describe('Key in the Secret.'),
    })
    .describe(
      `Secret key holding ${what}; a Secret its owner labelled clinicalsuite.ai/usable-by-suites=true ` +
        '(or allowed by name in the operator config).',
    );

export const SuiteSpecSchema = z
  .strictObject({
    image: z
      .strictObject({
        registry: z.string().min(1).default(DEFAULT_IMAGE_REGISTRY).describe('Image registry host.'),
        repository: z.string().min(1).default(DEFAULT_IMAGE_REPOSITORY).describe('Image repository.'),
        tag: z
          .string()
          .regex(p.IMAGE_TAG, { error: 'must be a valid image tag' })
          .default(DEFAULT_IMAGE_TAG)
          .describe('Image tag.'),
        pullPolicy: z
          .enum(['Always', 'IfNotPresent', 'Never'])
          .default('IfNotPresent')
          .describe('Image pull policy.'),
        pullSecrets: z
          .array(z.strictObject({ name: z.string().regex(p.DNS_SUBDOMAIN).describe('Secret name.') }))
          .default([])
          .describe('Secrets for pulling the images.'),
      })
      .prefault({})
      .describe('Image every service runs (one image, one entrypoint per service).'),
    defaultResourceProfile: resourceProfile
      .default(DEFAULT_RESOURCE_PROFILE)
      .describe('Resource profile of services that set none and do not want a GPU.'),
    defaultGpuResourceProfile: resourceProfile
      .default(DEFAULT_GPU_RESOURCE_PROFILE)
      .describe('Resource profile of services that set none and want a GPU (llm, medllm, face, reasoning).'),
    monitoring: z
      .strictObject({
        serviceMonitor: z
          .boolean()
          .default(false)
          .describe('Create a ServiceMonitor per service (needs the CRD).'),
        scrapeInterval: z
          .string()
          .regex(p.DURATION, { error: 'must be a duration like 30s, 1m or 500ms' })
          .default('30s')
          .describe('Prometheus scrape interval.'),
      })
      .prefault({})
      .describe('Prometheus monitoring.'),
    networkPolicy: z
      .strictObject({
        enabled: z
          .boolean()
          .default(false)
          .describe("Let only the suite's own components reach services that carry no auth."),
      })
      .prefault({})
      .describe('NetworkPolicies.'),
    auth: z
      .strictObject({
        apiTokenSecretRef: secretKeyRef('the LLM API token (API_TOKEN)').optional(),
        agentTokenSecretRef: secretKeyRef('the agent API token (AI_AGENT_API_TOKEN)').optional(),
        taskAgentTokenSecretRef: secretKeyRef(
          'the task agent API token (TASK_AGENT_API_TOKEN; the task proxy presents it)',
        ).optional(),
        taskProxyUsersSecretRef: secretKeyRef(
          'the users of the task proxy, one `username:<hash>` line each (hashes from ' +
            '`node services/task-proxy/dist/hash-password.js`), mounted read-only as its ' +
            'TASK_PROXY_USERS_FILE and re-read when the Secret changes. When unset the proxy has one ' +
            'user, TASK_PROXY_USER and TASK_PROXY_PASSWORD from the generated Secret (keys ' +
            'task-proxy-user, default admin, and task-proxy-password)',
          'users',
        ).optional(),
      })
      .prefault({})
      .describe(
        "Bearer tokens of the services that require one, and the task proxy's users; generated into the " +
          'Secret <suite>-auth when unset.',
      ),
    retainModels: z
      .boolean()
      .default(false)
      .describe('Keep the model volumes when the suite is deleted (they carry no ownerReference).'),
    services: ServicesSchema.prefault({}),
  })
  .superRefine((spec, ctx) => {
    for (const issue of dependencyIssues(spec.services)) {
      ctx.addIssue({ code: 'custom', path: ['services', ...issue.path], message: issue.message });
    }
  })
  .describe('Desired state of a ClinicalSuite.');
