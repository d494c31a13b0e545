/**
 * Prometheus in the real-node cluster, as a platform team without prometheus-operator runs it:
 * Debian's Prometheus (localhost/prometheus:e2e, test/node/prometheus-image.sh) as a pod in
 * `monitoring` with the labels the operator's NetworkPolicies let in, finding the suite's pods
 * with kubernetes_sd_configs against the API server (its service account may list them), and
 * relabelling them as prometheus-operator does with the operator's ServiceMonitors
 * (operator/src/resources/service-monitor.ts: `namespace`, `suite`, `service`, honour_labels). The
 * chart's alert rules are loaded as shipped, except that every `for:` is cut to FOR_SECONDS so a
 * test sees them fire and clear in seconds instead of minutes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const PROMETHEUS_IMAGE = 'localhost/prometheus:e2e';
export const MONITORING = 'monitoring';
export const FOR_SECONDS = 10;

export interface PromCheck {
  readonly url: string;
}

function scrapeJob(job: string, namespace: string, keep: Record<string, string>, service?: string): object {
  const meta = (label: string): string =>
    `__meta_kubernetes_service_label_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`;
  return {
    job_name: job,
    honor_labels: true,
    kubernetes_sd_configs: [{ role: 'endpoints', namespaces: { names: [namespace] } }],
    relabel_configs: [
      ...Object.entries(keep).map(([label, value]) => ({
        action: 'keep',
        source_labels: [meta(label)],
        regex: value,
      })),
      { action: 'keep', source_labels: ['__meta_kubernetes_endpoint_port_name'], regex: 'http|metrics' },
      { action: 'replace', source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { action: 'replace', source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
      { action: 'replace', source_labels: [meta('app.kubernetes.io/instance')], target_label: 'suite' },
      service === undefined
        ? { action: 'replace', source_labels: [meta('app.kubernetes.io/component')], target_label: 'service' }
        : { action: 'replace', replacement: service, target_label: 'service' },
      {
        action: 'replace',
        source_labels: ['service'],
        regex: '(.+)-(.+)',
        replacement: '${1}_${2}',
        target_label: 'service',
      },
    ],
  };
}

export function prometheusConfig(suiteNamespace: string, operatorNamespace: string): string {
  return stringify({
    global: { scrape_interval: '5s', scrape_timeout: '4s', evaluation_interval: '5s' },
    rule_files: ['/etc/prometheus/clinicalsuite.rules.yaml'],
    scrape_configs: [
      scrapeJob('clinicalsuite', suiteNamespace, { 'app.kubernetes.io/part-of': 'clinicalsuite' }),
      scrapeJob(
        'clinicalsuite-operator',
        operatorNamespace,
        { 'app.kubernetes.io/component': 'operator' },
        'operator',
      ),
    ],
  });
}

/** The chart's rule file with every `for:` cut to FOR_SECONDS. */
export function rulesForTest(repo: string): string {
  const text = readFileSync(
    join(repo, 'helm', 'clinical-suite', 'alerts', 'clinicalsuite.rules.yaml'),
    'utf8',
  );
  return text.replace(/^(\s*for:\s*)\S+\s*$/gm, `$1${FOR_SECONDS}s`);
}

/** Namespace, service account and its read access, config, and the Prometheus pod. */
export function prometheusObjects(repo: string, suiteNamespace: string, operatorNamespace: string): string {
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: MONITORING } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'prometheus', namespace: MONITORING } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'e2e-prometheus' },
      rules: [
        {
          apiGroups: [''],
          resources: ['pods', 'services', 'endpoints', 'namespaces'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'e2e-prometheus' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'e2e-prometheus' },
      subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: MONITORING }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'prometheus', namespace: MONITORING },
      data: {
        'prometheus.yml': prometheusConfig(suiteNamespace, operatorNamespace),
        'clinicalsuite.rules.yaml': rulesForTest(repo),
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'prometheus',
        namespace: MONITORING,
        labels: { 'app.kubernetes.io/name': 'prometheus' },
      },
      spec: {
        serviceAccountName: 'prometheus',
        containers: [
          {
            name: 'prometheus',
            image: PROMETHEUS_IMAGE,
            imagePullPolicy: 'Never',
            args: [
              '--config.file=/etc/prometheus/prometheus.yml',
              '--storage.tsdb.path=/prometheus',
              '--web.listen-address=:9090',
            ],
            ports: [{ name: 'web', containerPort: 9090 }],
            readinessProbe: { httpGet: { path: '/-/ready', port: 9090 }, periodSeconds: 2 },
            volumeMounts: [
              { name: 'config', mountPath: '/etc/prometheus' },
              { name: 'data', mountPath: '/prometheus' },
            ],
          },
        ],
        volumes: [
          { name: 'config', configMap: { name: 'prometheus' } },
          { name: 'data', emptyDir: {} },
        ],
      },
    },
  ];
  return objects.map((o) => stringify(o)).join('---\n');
}
