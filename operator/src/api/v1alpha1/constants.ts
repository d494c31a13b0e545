/** Identity of the ClinicalSuite API and the labels every generated object carries. */

export const GROUP = 'clinicalsuite.ai';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}` as const;
export const KIND = 'ClinicalSuite';
export const LIST_KIND = 'ClinicalSuiteList';
export const PLURAL = 'clinicalsuites';
export const SINGULAR = 'clinicalsuite';
export const SHORT_NAMES: readonly string[] = ['csuite'];

/** The one field manager for server-side apply. */
export const FIELD_MANAGER = 'clinicalsuite-operator';

/** Recommended labels (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/). */
export const LABEL_NAME = 'app.kubernetes.io/name';
export const LABEL_INSTANCE = 'app.kubernetes.io/instance';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_PART_OF = 'app.kubernetes.io/part-of';
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
/** Never part of a selector. */
export const LABEL_VERSION = 'app.kubernetes.io/version';

/** Value of `app.kubernetes.io/part-of` on every generated object. */
export const PART_OF = 'clinicalsuite';
/** Value of `app.kubernetes.io/managed-by` on every generated object. */
export const MANAGED_BY = FIELD_MANAGER;

/** Defaults of the suite-wide image settings. */
export const DEFAULT_IMAGE_REGISTRY = 'ghcr.io';
export const DEFAULT_IMAGE_REPOSITORY = 'clinicalsuite/clinicalsuite';
export const DEFAULT_IMAGE_TAG = '0.1.0';

/** Resource profiles are defined in the operator's config; these are the names used when a spec names none. */
export const DEFAULT_RESOURCE_PROFILE = 'cpu:1';
export const DEFAULT_GPU_RESOURCE_PROFILE = 'nvidia-gpu:1';
