/** What the builders take and return, and the in-pod layout every service shares. */
import type { Suite } from '../api/v1alpha1/index.js';

/**
 * A parsed suite as read from the API server: the builders need its namespace (for URLs and
 * objects) and uid (for ownerReferences), which a suite only has once it exists.
 */
export type OwnedSuite = Suite & {
  readonly metadata: Suite['metadata'] & { readonly uid: string; readonly namespace: string };
  /**
   * The uid of the generated `<suite>-auth` Secret as the reconciler found or made it (undefined
   * when every credential has an explicit ref). Part of the pods' config hash: a Secret deleted and
   * made again holds new tokens, which its pods only read at start.
   */
  readonly authSecretUid?: string;
};

export type { KubeObject } from './wire.js';

/** Every service listens on this port in its pod; the Service exposes the same port. */
export const POD_PORT = 8080;
export const PORT_NAME = 'http';
export const POD_HOST = '0.0.0.0';
/** Mount points in every pod. */
export const MODELS_DIR = '/models';
export const DATA_DIR = '/data';
export const TMP_DIR = '/tmp';
/** Non-root uid/gid the images run as. */
export const RUN_AS_USER = 10001;

/** Annotations the operator writes. */
export const ANNOTATION_CONFIG_HASH = 'clinicalsuite.ai/config-hash';
/** On retained model PVCs, in the spirit of Helm's `helm.sh/resource-policy: keep`. */
export const ANNOTATION_RESOURCE_POLICY = 'clinicalsuite.ai/resource-policy';
