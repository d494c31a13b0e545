/**
 * The Secrets and PersistentVolumeClaims a suite's pods read, and whether the suite may name each
 * (the trust model: helm/clinical-suite/README.md). Whoever may create a ClinicalSuite has the
 * operator run pods for them; without this rule a suite could name any Secret key or claim of its
 * namespace (an env var from a `secretKeyRef`, a volume from an `existingClaim`) and read it from
 * its pod. A suite's pods may read:
 *
 * - what the operator makes for this suite: its auth Secret, its env Secret (env-secret.ts), its
 *   model and data claims (made by this operator when they exist; another suite's are refused by
 *   the reconciler's name-conflict check; one nobody made here is refused, so a suite cannot take
 *   over a claim by choosing a name that collides with it), and any object labelled as made by
 *   this operator for this suite (managed-by and instance), so a Secret it makes later is known;
 * - an object whose owner opted it in: the label of the operator config's rule (default
 *   `clinicalsuite.ai/usable-by-suites: "true"`), which only someone who may write that object sets;
 * - an object named in the rule's `names` (the chart's allowedSecretRefs / allowedClaimRefs);
 *   `*` allows every object of that kind (no check).
 *
 * Image pull Secrets are not checked: the kubelet reads them to pull, the pod never sees them.
 * Everything is read from the built pod templates, so a reference added to a builder later is
 * checked too. Pure: the live objects' labels are read by the reconciler and passed in.
 */
import { LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY, type ComponentKey } from '../api/v1alpha1/index.js';
import { authSecretName } from './auth.js';
import { podData } from './data.js';
import { envSecretName } from './env-secret.js';
import { podModel } from './model.js';
import type { OperatorConfig, ReferenceRule } from './operator-config.js';
import type { OwnedSuite } from './types.js';
import type { KubeObject } from './wire.js';

export type ReferenceKind = 'Secret' | 'PersistentVolumeClaim';

/** One object the pods of a component read, and where (for the message that names it). */
export interface PodReference {
  readonly kind: ReferenceKind;
  readonly name: string;
  /** Where the pod template names it, e.g. `env DATABASE_URL of container face`. */
  readonly uses: readonly string[];
}

/** The labels of the live object, or undefined when it does not exist. */
export interface LiveReference {
  readonly labels?: Readonly<Record<string, string>> | undefined;
}

export type ReferenceVerdict =
  { readonly allowed: true } | { readonly allowed: false; readonly message: string };

/** The chart values that hold each kind's rule, for messages. */
const CHART_VALUE: Readonly<Record<ReferenceKind, string>> = {
  Secret: 'allowedSecretRefs',
  PersistentVolumeClaim: 'allowedClaimRefs',
};

interface LooseContainer {
  readonly name?: string;
  readonly env?: readonly { name?: string; valueFrom?: { secretKeyRef?: { name?: string } } }[];
  readonly envFrom?: readonly { secretRef?: { name?: string } }[];
}

interface LooseVolume {
  readonly name?: string;
  readonly secret?: { secretName?: string };
  readonly persistentVolumeClaim?: { claimName?: string };
  readonly projected?: { sources?: readonly { secret?: { name?: string } }[] };
}

interface LoosePodSpec {
  readonly initContainers?: readonly LooseContainer[];
  readonly containers?: readonly LooseContainer[];
  readonly volumes?: readonly LooseVolume[];
}

function podSpecOf(obj: KubeObject): LoosePodSpec | undefined {
  if (obj.kind !== 'Deployment') return undefined;
  return obj.spec.template.spec as LoosePodSpec;
}

/** Every Secret and claim the pod templates among `objects` read, in order of first use. */
export function podReferences(objects: readonly KubeObject[]): PodReference[] {
  const found = new Map<string, { kind: ReferenceKind; name: string; uses: string[] }>();
  const add = (kind: ReferenceKind, name: string | undefined, use: string) => {
    if (name === undefined || name === '') return;
    const key = `${kind}/${name}`;
    const entry = found.get(key) ?? { kind, name, uses: [] };
    if (!entry.uses.includes(use)) entry.uses.push(use);
    found.set(key, entry);
  };
  for (const obj of objects) {
    const pod = podSpecOf(obj);
    if (pod === undefined) continue;
    for (const c of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
      for (const e of c.env ?? [])
        add('Secret', e.valueFrom?.secretKeyRef?.name, `env ${e.name ?? '?'} of container ${c.name ?? '?'}`);
      for (const e of c.envFrom ?? [])
        add('Secret', e.secretRef?.name, `envFrom of container ${c.name ?? '?'}`);
    }
    for (const v of pod.volumes ?? []) {
      const use = `volume ${v.name ?? '?'}`;
      add('Secret', v.secret?.secretName, use);
      add('PersistentVolumeClaim', v.persistentVolumeClaim?.claimName, use);
      for (const source of v.projected?.sources ?? []) add('Secret', source.secret?.name, use);
    }
  }
  return [...found.values()];
}

/**
 * The objects the operator itself makes for `key` of this suite (`<kind>/<name>`): the auth and env
 * Secrets, and the component's own model and data claims (not an existingClaim).
 */
export function ownReferences(suite: OwnedSuite, key: ComponentKey): ReadonlySet<string> {
  const model = podModel(suite, key);
  const data = podData(suite, key);
  return new Set([
    `Secret/${authSecretName(suite)}`,
    `Secret/${envSecretName(suite)}`,
    ...(model.ownClaim && model.claimName !== null ? [`PersistentVolumeClaim/${model.claimName}`] : []),
    ...(data.ownClaim && data.claimName !== null ? [`PersistentVolumeClaim/${data.claimName}`] : []),
  ]);
}

/** The rule of a kind in the operator config. */
export function referenceRule(config: OperatorConfig, kind: ReferenceKind): ReferenceRule {
  return kind === 'Secret' ? config.suiteReferences.secrets : config.suiteReferences.claims;
}

/** What a suite's pods may read of a kind, in words, for the refusal's message. */
export function describeRule(kind: ReferenceKind, rule: ReferenceRule): string {
  const plural = kind === 'Secret' ? 'Secrets' : 'PersistentVolumeClaims';
  const named =
    rule.names.length === 0
      ? `none listed in the operator's ${CHART_VALUE[kind]}.names`
      : `those the operator's ${CHART_VALUE[kind]}.names lists (${rule.names.join(', ')})`;
  const labelled = rule.label === '' ? '' : `, ${plural} labelled ${rule.label}=true`;
  return `a suite's pods may read only the ${plural} the operator makes for the suite${labelled} and ${named}`;
}

/**
 * Whether the suite may make its pods read `ref`: listed by name, labelled by its owner, made by this
 * operator for this suite (the labels it gives what it makes: managed-by and the suite's instance,
 * which only someone who may write that object can set), or one the operator makes for the suite
 * by name (`own`: absent, it is about to be made; present, this operator made it, and the
 * reconciler's name-conflict check stops another suite's). `live` is the object as it is now (its
 * labels), undefined when it does not exist; `suite` the suite's name.
 */
export function judgeReference(
  ref: PodReference,
  live: LiveReference | undefined,
  rule: ReferenceRule,
  own: boolean,
  suite?: string,
): ReferenceVerdict {
  if (rule.names.includes('*') || rule.names.includes(ref.name)) return { allowed: true };
  const labels = live?.labels;
  if (live !== undefined && rule.label !== '' && labels?.[rule.label] === 'true') return { allowed: true };
  const madeByOperator = labels?.[LABEL_MANAGED_BY] === MANAGED_BY;
  if (madeByOperator && suite !== undefined && labels[LABEL_INSTANCE] === suite) return { allowed: true };
  const what = `${ref.kind} ${ref.name} (${ref.uses.join(', ')})`;
  if (own) {
    if (live === undefined || madeByOperator) return { allowed: true };
    return {
      allowed: false,
      message:
        `${what} is not allowed: the operator would make it for this suite, but an object of that name ` +
        `exists that it did not make (rename the suite or that object); ${describeRule(ref.kind, rule)}`,
    };
  }
  const missing = live === undefined ? ' (it does not exist)' : '';
  return { allowed: false, message: `${what} is not allowed${missing}: ${describeRule(ref.kind, rule)}` };
}
