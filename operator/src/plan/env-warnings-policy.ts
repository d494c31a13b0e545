/**
 * The spec of a ValidatingAdmissionPolicy that makes the API server warn, never refuse, when a
 * ClinicalSuite's `env` sets a variable that nothing in its service reads: `kubectl apply` prints
 * it at once, where the operator's UnreadEnv event (unread-env.ts) comes only when the component
 * is applied. Both read the same tables. CEL cannot say which name was probably meant, so the
 * warning points to the event for that.
 *
 * `npm run generate` writes it to the Helm chart (helm/clinical-suite/admission/env-warnings.yaml),
 * whose template adds the metadata and a binding with `validationActions: [Warn]`.
 */
import { COMPONENT_KEYS, GROUP, PLURAL, VERSION, type ComponentKey } from '../api/v1alpha1/index.js';
import { KIT_ENV_NAMES, SERVICE_ENV_NAMES } from './service-env-names.js';
import { RUNTIME_ENV_NAMES, RUNTIME_ENV_PREFIXES } from './unread-env.js';

const celList = (items: readonly string[]): string => `[${items.map((i) => `'${i}'`).join(', ')}]`;

/** The CEL variable holding a component's unread names (a list, empty when it sets none). */
export const unreadVariable = (key: ComponentKey): string => `unread_${key}`;

export function buildEnvWarningsPolicySpec(): Record<string, unknown> {
  const known = (key: ComponentKey): string =>
    `n in variables.kit || n in ${celList(SERVICE_ENV_NAMES[key])} || n in variables.runtime || ` +
    'variables.runtimePrefixes.exists(p, n.startsWith(p))';
  return {
    failurePolicy: 'Ignore',
    matchConstraints: {
      resourceRules: [
        { apiGroups: [GROUP], apiVersions: [VERSION], operations: ['CREATE', 'UPDATE'], resources: [PLURAL] },
      ],
    },
    variables: [
      { name: 'kit', expression: celList(KIT_ENV_NAMES) },
      { name: 'runtime', expression: celList(RUNTIME_ENV_NAMES) },
      { name: 'runtimePrefixes', expression: celList(RUNTIME_ENV_PREFIXES) },
      ...COMPONENT_KEYS.map((key) => {
        const service = `object.spec.services.${key}`;
        return {
          name: unreadVariable(key),
          expression:
            `has(object.spec.services) && has(${service}) && has(${service}.env) ? ` +
            `${service}.env.map(e, e.name).filter(n, !(${known(key)})) : []`,
        };
      }),
    ],
    validations: COMPONENT_KEYS.map((key) => ({
      expression: `size(variables.${unreadVariable(key)}) == 0`,
      messageExpression:
        `'spec.services.${key}.env: nothing in the ${key} service reads ' + ` +
        `variables.${unreadVariable(key)}.join(', ') + '; such a setting has no effect (the UnreadEnv ' + ` +
        `'event in kubectl describe clinicalsuite names the variable each one probably meant)'`,
      reason: 'Invalid',
    })),
  };
}
