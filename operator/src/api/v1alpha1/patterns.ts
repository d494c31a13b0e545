/** Patterns of the schema; all of them RE2-compatible (the API server checks CRD patterns with Go's regexp). */

export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** RFC 1035 label: a DNS label starting with a letter (what Service names must be). */
export const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
export const RESOURCE_PROFILE = /^[a-z0-9-]+:[0-9]+$/;
export const QUANTITY = /^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
export const QUANTITY_HINT = 'must be a quantity like 500m, 2, 1.5 or 8Gi';
export const DURATION = /^[0-9]+(ms|s|m|h)$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MODEL_SOURCE = /^(https|hf|file|pip):\/\/\S+$/;
export const RELATIVE_PATH = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;
export const SHA256 = /^[a-f0-9]{64}$/;
export const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
export const IMAGE_TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** metav1.Condition's reason. */
export const CONDITION_REASON = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
