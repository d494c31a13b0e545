/**
 * Which cluster the operator's integration tests run against.
 *
 * By default (what `npm test` and CI do) the local test control plane: etcd, kube-apiserver,
 * controller-manager, scheduler and kwok's fake nodes, started by `up()`, with the operator as a
 * local process. Nothing here is read in that mode.
 *
 * With `CLINICALSUITE_E2E_KUBECONFIG` set, an external cluster instead, such as the kind cluster
 * test/e2e/run.sh creates (see test/e2e/README.md). Its variables, parsed once here:
 *
 *   CLINICALSUITE_E2E_KUBECONFIG      kubeconfig of the cluster (its current context is used)
 *   CLINICALSUITE_E2E_OPERATOR        `<namespace>/<release>` of the operator the Helm chart
 *                                     installed there; unset: the tests run the built operator as a
 *                                     local process against the cluster, as in the default mode
 *   CLINICALSUITE_E2E_IMAGE           `<registry>/<repository>:<tag>` the suites' pods run (a kind
 *                                     cluster has it loaded; pulled `Never`); unset: the suites'
 *                                     default image
 *   CLINICALSUITE_E2E_STORAGE_CLASS   the cluster's storage class for model volumes (kind: standard)
 *   CLINICALSUITE_E2E_KUBECTL, _HELM  the binaries (default: `kubectl` and `helm` on PATH)
 *   CLINICALSUITE_E2E_TIMEOUT_SCALE   multiplies waits: real pods start slower than kwok's (default 3)
 */
import { existsSync } from 'node:fs';
import { z } from 'zod';

export interface ImageRef {
  registry: string;
  repository: string;
  tag: string;
}

export interface ExternalCluster {
  kubeconfig: string;
  /** The chart-installed operator, or undefined when the tests start one locally. */
  operator: { namespace: string; release: string } | undefined;
  image: ImageRef | undefined;
  storageClass: string;
  kubectl: string;
  helm: string;
  timeoutScale: number;
}

/** `localhost/clinicalsuite:e2e` → registry `localhost`, repository `clinicalsuite`, tag `e2e`. */
export function parseImageRef(ref: string): ImageRef {
  const m = /^([^/\s]+)\/([a-z0-9][a-z0-9._/-]*):([\w][\w.-]{0,127})$/.exec(ref);
  if (!m) {
    throw new Error(
      `CLINICALSUITE_E2E_IMAGE=${JSON.stringify(ref)} is not <registry>/<repository>:<tag> ` +
        '(e.g. localhost/clinicalsuite:e2e)',
    );
  }
  return { registry: m[1]!, repository: m[2]!, tag: m[3]! };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const EnvSchema = z.object({
  CLINICALSUITE_E2E_KUBECONFIG: z.string().min(1),
  CLINICALSUITE_E2E_OPERATOR: z
    .string()
    .refine((s) => s.split('/').length === 2 && s.split('/').every((p) => DNS_LABEL.test(p)), {
      error: 'must be <namespace>/<release>, e.g. clinicalsuite-system/cs',
    })
    .optional(),
  CLINICALSUITE_E2E_IMAGE: z.string().min(1).optional(),
  CLINICALSUITE_E2E_STORAGE_CLASS: z.string().regex(DNS_LABEL).default('standard'),
  CLINICALSUITE_E2E_KUBECTL: z.string().min(1).default('kubectl'),
  CLINICALSUITE_E2E_HELM: z.string().min(1).default('helm'),
  CLINICALSUITE_E2E_TIMEOUT_SCALE: z.coerce.number().min(1).max(20).default(3),
});

/** The external cluster the environment names, or undefined in the default (kwok) mode. */
export function externalCluster(env: NodeJS.ProcessEnv = process.env): ExternalCluster | undefined {
  if (!env['CLINICALSUITE_E2E_KUBECONFIG']) return undefined;
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`bad e2e settings: ${problems}`);
  }
  const e = parsed.data;
  if (!existsSync(e.CLINICALSUITE_E2E_KUBECONFIG)) {
    throw new Error(`CLINICALSUITE_E2E_KUBECONFIG: no file at ${e.CLINICALSUITE_E2E_KUBECONFIG}`);
  }
  const [namespace, release] = e.CLINICALSUITE_E2E_OPERATOR?.split('/') ?? [];
  return {
    kubeconfig: e.CLINICALSUITE_E2E_KUBECONFIG,
    operator: namespace && release ? { namespace, release } : undefined,
    image: e.CLINICALSUITE_E2E_IMAGE === undefined ? undefined : parseImageRef(e.CLINICALSUITE_E2E_IMAGE),
    storageClass: e.CLINICALSUITE_E2E_STORAGE_CLASS,
    kubectl: e.CLINICALSUITE_E2E_KUBECTL,
    helm: e.CLINICALSUITE_E2E_HELM,
    timeoutScale: e.CLINICALSUITE_E2E_TIMEOUT_SCALE,
  };
}
