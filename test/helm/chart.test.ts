/**
 * The operator's Helm chart with the real `helm` (built with the control plane): lint, what the
 * templates render, values rejected by values.schema.json, and an install on the test control
 * plane that brings the operator's Deployment up.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { up, type ClusterInfo } from '../../tools/cluster/src/cluster.js';
import { binaries, clusterLayout, missingBinaries, readVersions } from '../../tools/cluster/src/layout.js';
import { WATCHED_KINDS } from '../../operator/src/k8s/watch.js';
import { holdControlPlaneForThisFile } from '../cluster/exclusive.js';
import { parseOperatorConfig } from '../../operator/src/resources/operator-config.js';

const REPO = new URL('../../', import.meta.url).pathname;
const CHART = join(REPO, 'helm', 'clinical-suite');
const skip = missingBinaries().length > 0 && process.env['CLUSTER_TESTS'] === 'skip';
const bins = binaries(clusterLayout(), readVersions());

function helm(args: string[], env: Record<string, string> = {}): { code: number; out: string; err: string } {
  const r = spawnSync(bins.helm, args, {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, HELM_CACHE_HOME: '/tmp/helm-cache', HELM_CONFIG_HOME: '/tmp/helm-config', ...env },
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

interface Rendered {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  rules?: { apiGroups: string[]; verbs: string[]; resources: string[] }[];
}

function render(...set: string[]): Rendered[] {
  const r = helm(['template', 'cs', CHART, '--namespace', 'ops', ...set.flatMap((s) => ['--set', s])]);
  if (r.code !== 0) throw new Error(r.err);
  return parseAllDocuments(r.out)
    .map((d) => d.toJS() as Rendered | null)
    .filter((d): d is Rendered => d !== null);
}

(skip ? describe.skip : describe)('helm chart clinical-suite', () => {
  it('passes helm lint', () => {
    const r = helm(['lint', CHART, '--strict']);
    expect(r.err + r.out).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(r.code).toBe(0);
  });

  it('ships the CRD generated from the API schema', () => {
    expect(readFileSync(join(CHART, 'crds', 'clinicalsuite.ai_clinicalsuites.yaml'), 'utf8')).toBe(
      readFileSync(join(REPO, 'crds', 'clinicalsuite.ai_clinicalsuites.yaml'), 'utf8'),
    );
  });

  it('renders a restricted operator Deployment with leader election and a config checksum', () => {
    const docs = render();
    const deployment = docs.find((d) => d.kind === 'Deployment') as unknown as {
      spec: {
        template: { metadata: { annotations: Record<string, string> }; spec: Record<string, unknown> };
      };
    };
    const pod = deployment.spec.template.spec as {
      securityContext: Record<string, unknown>;
      containers: { securityContext: Record<string, unknown>; env: { name: string; value?: string }[] }[];
    };
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.containers[0]!.env).toContainEqual({ name: 'LEADER_ELECT', value: 'true' });
    expect(pod.containers[0]!.env).toContainEqual({ name: 'RESYNC_PERIOD_SECONDS', value: '600' });
    expect(deployment.spec.template.metadata.annotations['checksum/config']).toMatch(/^[0-9a-f]{64}$/);
    const changed = render('operatorConfig.resourceProfiles.x.requests.cpu=1').find(
      (d) => d.kind === 'Deployment',
    ) as unknown as typeof deployment;
    expect(changed.spec.template.metadata.annotations['checksum/config']).not.toBe(
      deployment.spec.template.metadata.annotations['checksum/config'],
    );
    expect(docs.some((d) => d.kind === 'ServiceMonitor')).toBe(false);
    expect(render('metrics.serviceMonitor.enabled=true').some((d) => d.kind === 'ServiceMonitor')).toBe(true);
  });

  it('ships every dashboard as a ConfigMap for the Grafana sidecar, as it is in dashboards/', () => {
    const sources = readdirSync(join(REPO, 'dashboards')).filter((f) => f.endsWith('.json'));
    const maps = render('dashboards.folder=Clinical AI').filter(
      (d) =>
        d.kind === 'ConfigMap' &&
        d.data !== undefined &&
        Object.keys(d.data).some((k) => k.endsWith('.json')),
    );
    expect(
      maps
        .map((m) => Object.keys(m.data!))
        .flat()
        .sort(),
    ).toEqual(sources.sort());
    for (const map of maps) {
      const [file, json] = Object.entries(map.data!)[0]!;
      expect(map.metadata.labels?.['grafana_dashboard']).toBe('1');
      expect(map.metadata.annotations).toEqual({ grafana_folder: 'Clinical AI' });
      expect(map.metadata.namespace).toBe('ops');
      expect(map.metadata.name).toBe(`cs-clinical-suite-dashboard-${file.replace(/\.json$/, '')}`);
      // Byte for byte: the {{service}} legends were not taken for Helm templates.
      expect(json.trimEnd()).toBe(readFileSync(join(REPO, 'dashboards', file), 'utf8').trimEnd());
      expect((JSON.parse(json) as { uid: string }).uid).toMatch(/^clinicalsuite-/);
    }
    const custom = render(
      'dashboards.labels.grafana_dashboard=null',
      'dashboards.labels.team=clinic',
      'dashboards.namespace=monitoring',
    );
    const one = custom.find((d) => d.metadata.name === 'cs-clinical-suite-dashboard-overview')!;
    expect(one.metadata.labels).toMatchObject({ team: 'clinic' });
    expect(one.metadata.labels).not.toHaveProperty('grafana_dashboard');
    expect(one.metadata.annotations).toBeUndefined();
    expect(one.metadata.namespace).toBe('monitoring');
    expect(render('dashboards.enabled=false').filter((d) => d.metadata.name.includes('-dashboard-'))).toEqual(
      [],
    );
  });

  it('renders the alert rules file as a PrometheusRule when asked, its templates intact', () => {
    expect(render().some((d) => d.kind === 'PrometheusRule')).toBe(false);
    const rule = render('prometheusRule.enabled=true', 'prometheusRule.labels.release=kps').find(
      (d) => d.kind === 'PrometheusRule',
    )!;
    expect(rule.metadata.labels).toMatchObject({ release: 'kps' });
    const file = parse(
      readFileSync(join(REPO, 'dashboards', 'alerts', 'clinicalsuite.rules.yaml'), 'utf8'),
    ) as {
      groups: unknown[];
    };
    expect(rule.spec).toEqual({ groups: file.groups });
    expect(JSON.stringify(rule.spec)).toContain('{{ $labels.service }}');
  });

  it("scrapes the operator keeping its own labels (service, the suites' namespace)", () => {
    const monitor = render('metrics.serviceMonitor.enabled=true').find((d) => d.kind === 'ServiceMonitor')!;
    expect(monitor.spec).toMatchObject({
      endpoints: [
        {
          port: 'http',
          path: '/metrics',
          honorLabels: true,
          relabelings: [{ action: 'replace', targetLabel: 'service', replacement: 'operator' }],
        },
      ],
    });
  });

  it('grants least privilege: no wildcards, read-only pods, status through its subresource', () => {
    const roles = render().filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
    const rules = roles.flatMap((r) => r.rules ?? []);
    expect(rules.flatMap((r) => [...r.verbs, ...r.resources])).not.toContain('*');
    expect(rules.find((r) => r.resources.includes('pods'))?.verbs).toEqual(['get', 'list', 'watch']);
    expect(rules.find((r) => r.resources.includes('clinicalsuites'))?.verbs).toEqual([
      'get',
      'list',
      'watch',
    ]);
    expect(rules.find((r) => r.resources.includes('leases'))?.verbs).toEqual(['get', 'create', 'update']);
    // blockOwnerDeletion on the suite's objects needs update on its finalizers where
    // OwnerReferencesPermissionEnforcement is on (OpenShift).
    expect(rules.find((r) => r.resources.includes('clinicalsuites/finalizers'))?.verbs).toEqual(['update']);
    // Every kind the operator watches (a deleted or edited object wakes its suite) can be listed and watched.
    for (const kind of WATCHED_KINDS) {
      const rule = rules.find((r) => r.apiGroups.includes(kind.group) && r.resources.includes(kind.resource));
      expect([kind.resource, rule?.verbs]).toEqual([
        kind.resource,
        expect.arrayContaining(['list', 'watch']),
      ]);
    }
    // Secrets by name only: listing or watching them would read every Secret of the namespace.
    expect(rules.filter((r) => r.resources.includes('secrets')).map((r) => r.verbs)).toEqual([
      ['get', 'create', 'patch', 'delete'],
    ]);
    // Nothing cluster-scoped: the ServiceMonitor CRD is found through API discovery.
    expect(rules.flatMap((r) => r.resources)).not.toContain('customresourcedefinitions');
    // Leftover ServiceMonitors (monitoring switched off, a service disabled) are deleted.
    expect(rules.find((r) => r.resources.includes('servicemonitors'))?.verbs).toEqual(
      expect.arrayContaining(['get', 'list', 'create', 'patch', 'delete']),
    );
  });

  it('is namespace-scoped by default: a Role in the release namespace, no ClusterRole, WATCH_NAMESPACES set', () => {
    const rbac = (docs: Rendered[]) =>
      docs
        .filter((d) => /Role/.test(d.kind))
        .map((d) => `${d.kind} ${d.metadata.namespace ?? '(cluster)'}/${d.metadata.name}`)
        .sort();
    const watched = (docs: Rendered[]) =>
      (
        docs.find((d) => d.kind === 'Deployment') as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        }
      ).spec.template.spec.containers[0]!.env.find((e) => e.name === 'WATCH_NAMESPACES')?.value;
    const byDefault = render();
    expect(rbac(byDefault)).toEqual([
      'Role ops/cs-clinical-suite',
      'Role ops/cs-clinical-suite-leader-election',
      'RoleBinding ops/cs-clinical-suite',
      'RoleBinding ops/cs-clinical-suite-leader-election',
    ]);
    expect(watched(byDefault)).toBe('ops');
    const binding = byDefault.find(
      (d) => d.kind === 'RoleBinding' && d.metadata.name === 'cs-clinical-suite',
    ) as unknown as {
      roleRef: unknown;
      subjects: unknown;
    };
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'cs-clinical-suite',
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'cs-clinical-suite', namespace: 'ops' },
    ]);

    const two = render('watchNamespaces={clinic-a,clinic-b}');
    expect(rbac(two)).toEqual([
      'Role clinic-a/cs-clinical-suite',
      'Role clinic-b/cs-clinical-suite',
      'Role ops/cs-clinical-suite-leader-election',
      'RoleBinding clinic-a/cs-clinical-suite',
      'RoleBinding clinic-b/cs-clinical-suite',
      'RoleBinding ops/cs-clinical-suite-leader-election',
    ]);
    expect(watched(two)).toBe('clinic-a,clinic-b');
    // The same rules wherever they are granted.
    const rulesOf = (docs: Rendered[], kind: string) =>
      docs.find((d) => d.kind === kind && d.metadata.name === 'cs-clinical-suite')?.rules;
    expect(rulesOf(two, 'Role')).toEqual(rulesOf(byDefault, 'Role'));

    const everywhere = render('watchNamespaces={*}');
    expect(rbac(everywhere)).toEqual([
      'ClusterRole (cluster)/cs-clinical-suite',
      'ClusterRoleBinding (cluster)/cs-clinical-suite',
      'Role ops/cs-clinical-suite-leader-election',
      'RoleBinding ops/cs-clinical-suite-leader-election',
    ]);
    expect(watched(everywhere)).toBe('*');
    expect(rulesOf(everywhere, 'ClusterRole')).toEqual(rulesOf(byDefault, 'Role'));
    const mixed = helm(['template', 'cs', CHART, '--set', 'watchNamespaces={*,clinic-a}']);
    expect(mixed.code).not.toBe(0);
    expect(mixed.err).toContain(
      'watchNamespaces: "*" (every namespace) cannot be combined with namespace names',
    );
  });

  it("passes what suites may reference to the operator's config, which parses it", () => {
    const config = (...set: string[]) => {
      const map = render(...set).find((d) => d.metadata.name === 'cs-clinical-suite-config')!;
      return parseOperatorConfig(parse(map.data!['operator-config.yaml']!)).suiteReferences;
    };
    expect(config()).toEqual({
      secrets: { label: 'clinicalsuite.ai/usable-by-suites', names: [] },
      claims: { label: 'clinicalsuite.ai/usable-by-suites', names: [] },
    });
    expect(config('allowedSecretRefs.names={shared-db}', 'allowedClaimRefs.label=')).toEqual({
      secrets: { label: 'clinicalsuite.ai/usable-by-suites', names: ['shared-db'] },
      claims: { label: '', names: [] },
    });
  });

  it('renders the env warnings policy (Warn, never Deny) from Kubernetes 1.30, unless switched off', () => {
    const policy = render().filter((o) => o.kind.startsWith('ValidatingAdmissionPolicy'));
    expect(policy.map((o) => `${o.kind} ${o.metadata.name}`)).toEqual([
      'ValidatingAdmissionPolicy cs-clinical-suite-env-warnings',
      'ValidatingAdmissionPolicyBinding cs-clinical-suite-env-warnings',
    ]);
    expect(policy[1]?.spec).toEqual({
      policyName: 'cs-clinical-suite-env-warnings',
      validationActions: ['Warn'],
    });
    expect(policy[0]?.spec).toMatchObject({ failurePolicy: 'Ignore' });
    const kinds = (...args: string[]) => {
      const r = helm(['template', 'cs', CHART, ...args]);
      if (r.code !== 0) throw new Error(r.err);
      return parseAllDocuments(r.out).map((d) => (d.toJS() as Rendered | null)?.kind);
    };
    expect(kinds('--kube-version', '1.29.0')).not.toContain('ValidatingAdmissionPolicy');
    expect(kinds('--set', 'envWarnings.enabled=false')).not.toContain('ValidatingAdmissionPolicy');
  });

  it('rejects bad values through values.schema.json', () => {
    const r = helm([
      'template',
      'cs',
      CHART,
      '--set',
      'replicaCount=0',
      '--set',
      'image.pullPolicy=Sometimes',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain("at '/replicaCount': minimum: got 0, want 1");
    expect(r.err).toContain('/image/pullPolicy');
    const monitoring = helm([
      'template',
      'cs',
      CHART,
      '--set',
      'prometheusRule.namespace=Not_A_Namespace',
      '--set',
      'dashboards.folderAnnotation=',
    ]);
    expect(monitoring.code).not.toBe(0);
    expect(monitoring.err).toContain('/prometheusRule/namespace');
    expect(monitoring.err).toContain('/dashboards/folderAnnotation');
    const scope = helm([
      'template',
      'cs',
      CHART,
      '--set',
      'watchNamespaces={Clinic}',
      '--set',
      'allowedSecretRefs.names={not_a_name}',
      '--set',
      'allowedClaimRefs.label=bad label',
    ]);
    expect(scope.code).not.toBe(0);
    expect(scope.err).toContain('/watchNamespaces/0');
    expect(scope.err).toContain('/allowedSecretRefs/names/0');
    expect(scope.err).toContain('/allowedClaimRefs/label');
  });

  describe('installed on the test control plane', () => {
    // Release `cs`'s cluster-scoped objects (its ValidatingAdmissionPolicy) are also what the
    // operator tests' chart installs make: one file at a time.
    holdControlPlaneForThisFile();
    let info: ClusterInfo;
    beforeAll(async () => {
      info = await up({ log: (line) => process.stderr.write(`cluster: ${line}\n`) });
    }, 90 * 60_000);

    it('installs the CRD, brings the operator Deployment up and creates the dashboard ConfigMaps', () => {
      const ns = `helm-${Date.now().toString(36)}`;
      const env = { KUBECONFIG: info.kubeconfig };
      const install = helm(
        ['install', 'cs', CHART, '--namespace', ns, '--create-namespace', '--wait', '--timeout', '90s'],
        env,
      );
      expect(install.err).toBe('');
      expect(install.code).toBe(0);
      const kubectl = (args: string[], options: { input?: string } = {}) =>
        spawnSync(bins.kubectl, args, { encoding: 'utf8', env: { ...process.env, ...env }, ...options });
      expect(kubectl(['get', 'crd', 'clinicalsuites.clinicalsuite.ai']).status).toBe(0);
      const ready = kubectl([
        'get',
        'deployment',
        'cs-clinical-suite',
        '-n',
        ns,
        '-o',
        'jsonpath={.status.readyReplicas}',
      ]);
      expect(ready.stdout).toBe('1');
      const dashboards = kubectl(['get', 'configmaps', '-n', ns, '-l', 'grafana_dashboard=1', '-o', 'name']);
      expect(dashboards.stdout.trim().split('\n').sort()).toEqual(
        readdirSync(join(REPO, 'dashboards'))
          .filter((f) => f.endsWith('.json'))
          .map((f) => `configmap/cs-clinical-suite-dashboard-${f.replace(/\.json$/, '')}`)
          .sort(),
      );
      // kubectl apply warns about an env variable nothing reads, once the policy is in force.
      const apply = (env: { name: string; value: string }[]) =>
        kubectl(['apply', '--dry-run=server', '-n', ns, '-f', '-'], {
          input: stringify({
            apiVersion: 'clinicalsuite.ai/v1alpha1',
            kind: 'ClinicalSuite',
            metadata: { name: 'warned' },
            spec: { services: { llm: { enabled: true, env } } },
          }),
        });
      const misspelt = [
        { name: 'LLM_CONTEXT_SIZE', value: '8192' },
        { name: 'CONTEXT_SIZE', value: '8192' },
        { name: 'NODE_OPTIONS', value: '--max-old-space-size=4096' },
      ];
      let warned = apply(misspelt);
      for (let i = 0; i < 40 && !warned.stderr.includes('Warning:'); i++) {
        spawnSync('sleep', ['0.5']);
        warned = apply(misspelt);
      }
      expect(warned.status).toBe(0);
      // The API server puts "Validation failed for ValidatingAdmissionPolicy '…' with binding '…': " first.
      expect(warned.stderr).toMatch(
        /^Warning: .*cs-clinical-suite-env-warnings.*: spec\.services\.llm\.env: nothing in the llm service reads LLM_CONTEXT_SIZE; such a setting has no effect/m,
      );
      const clean = apply(misspelt.slice(1));
      expect(clean.status).toBe(0);
      expect(clean.stderr).toBe('');
      expect(helm(['uninstall', 'cs', '--namespace', ns], env).code).toBe(0);
    }, 120_000);
  });
});
