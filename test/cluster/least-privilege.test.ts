/**
 * Least privilege on the real control plane (issue 28, attack 6): the Helm chart installed
 * namespace-scoped, and the built operator run with exactly what the chart gives its pod (the
 * chart's service account token, the env and the config file of its Deployment; under kwok the
 * chart's own pod runs no process). It reconciles a suite in its watched namespace, never touches
 * one elsewhere, cannot read a Secret outside (nor list one inside), and makes a suite's pods read
 * only the Secrets their owners made usable by suites, with plain credentials kept out of
 * ConfigMaps.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { stringify } from 'yaml';
import { up } from '../../tools/cluster/src/cluster.js';
import { binaries, clusterLayout, missingBinaries, readVersions } from '../../tools/cluster/src/layout.js';
import { freePort } from '../kit/helpers.js';
import { holdControlPlaneForThisFile } from './exclusive.js';

const REPO = new URL('../../', import.meta.url).pathname;
const CHART = join(REPO, 'helm', 'clinical-suite');
const OPERATOR = join(REPO, 'operator', 'dist', 'main.js');
const skip = missingBinaries().length > 0 && process.env['CLUSTER_TESTS'] === 'skip';
const bins = binaries(clusterLayout(), readVersions());

const id = Date.now().toString(36);
const OPS = `ops-${id}`;
const WATCHED = `watched-${id}`;
const OTHER = `other-${id}`;
const RELEASE = 'cs';
const SA = `system:serviceaccount:${OPS}:cs-clinical-suite`;

let adminKubeconfig = '';
let operatorKubeconfig = '';

function run(cmd: string, args: string[], kubeconfig: string, input?: string) {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    input,
    timeout: 120_000,
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      HELM_CACHE_HOME: '/tmp/helm-cache',
      HELM_CONFIG_HOME: '/tmp/helm-config',
    },
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

const kubectl = (args: string[], input?: string) => run(bins.kubectl, args, adminKubeconfig, input);

function kubectlOk(args: string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err}`);
  return r.out;
}

/** `kubectl auth can-i <verb> <resource> -n <ns>` for the operator's service account. */
const can = (verb: string, resource: string, ...scope: string[]): string =>
  kubectl(['auth', 'can-i', verb, resource, ...scope, `--as=${SA}`]).out.trim();

async function eventually<T>(what: string, probe: () => T | undefined, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const suite = (name: string, services: Record<string, unknown>) =>
  stringify({
    apiVersion: 'clinicalsuite.ai/v1alpha1',
    kind: 'ClinicalSuite',
    metadata: { name },
    spec: { services },
  });

/** A condition of a suite (or of one of its services) as `<status> <reason> <message>`. */
function conditionOf(ns: string, name: string, type: string, service?: string): string {
  const base = service === undefined ? '.status' : `.status.services.${service}`;
  return kubectlOk([
    'get',
    'clinicalsuite',
    name,
    '-n',
    ns,
    '-o',
    `jsonpath={${base}.conditions[?(@.type=="${type}")].status} {${base}.conditions[?(@.type=="${type}")].reason} {${base}.conditions[?(@.type=="${type}")].message}`,
  ]).trim();
}

(skip ? describe.skip : describe)('the operator installed namespace-scoped by the Helm chart', () => {
  let operator: ChildProcess | undefined;
  let log = '';

  holdControlPlaneForThisFile();

  beforeAll(async () => {
    const info = await up({ log: (line) => process.stderr.write(`cluster: ${line}\n`) });
    adminKubeconfig = info.kubeconfig;
    for (const ns of [WATCHED, OTHER]) kubectlOk(['create', 'namespace', ns]);
    const install = run(
      bins.helm,
      [
        'install',
        RELEASE,
        CHART,
        '-n',
        OPS,
        '--create-namespace',
        '--set',
        `watchNamespaces={${WATCHED}}`,
        '--wait',
        '--timeout',
        '90s',
      ],
      adminKubeconfig,
    );
    if (install.code !== 0) throw new Error(`helm install failed: ${install.err}`);

    // What the chart's pod would run with: its service account's token, its env, its config file.
    const token = kubectlOk(['create', 'token', 'cs-clinical-suite', '-n', OPS, '--duration=1h']).trim();
    const dir = mkdtempSync(join(tmpdir(), 'clinicalsuite-least-privilege-'));
    operatorKubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      operatorKubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'test',
            cluster: {
              server: info.server,
              'certificate-authority-data': Buffer.from(info.caPem).toString('base64'),
            },
          },
        ],
        users: [{ name: 'operator', user: { token } }],
        contexts: [{ name: 'operator', context: { cluster: 'test', user: 'operator' } }],
        'current-context': 'operator',
      }),
    );
    const configFile = join(dir, 'operator-config.yaml');
    writeFileSync(
      configFile,
      kubectlOk([
        'get',
        'configmap',
        'cs-clinical-suite-config',
        '-n',
        OPS,
        '-o',
        'jsonpath={.data.operator-config\\.yaml}',
      ]),
    );
    type Env = { name: string; value?: string };
    const env = JSON.parse(
      kubectlOk([
        'get',
        'deployment',
        'cs-clinical-suite',
        '-n',
        OPS,
        '-o',
        'jsonpath={.spec.template.spec.containers[0].env}',
      ]),
    ) as Env[];
    const plain = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));
    expect(plain['WATCH_NAMESPACES']).toBe(WATCHED);
    operator = spawn(process.execPath, [OPERATOR], {
      env: {
        PATH: process.env['PATH'],
        ...plain,
        KUBECONFIG: operatorKubeconfig,
        OPERATOR_CONFIG_FILE: configFile,
        POD_NAMESPACE: OPS,
        POD_NAME: `operator-${id}`,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    operator.stdout?.on('data', (c: Buffer) => (log += c.toString()));
    operator.stderr?.on('data', (c: Buffer) => (log += c.toString()));
    await eventually('the operator to lead', () => (log.includes('"leading') ? true : undefined));
  }, 10 * 60_000);

  afterAll(() => {
    operator?.kill('SIGTERM');
    if (adminKubeconfig === '') return;
    run(bins.helm, ['uninstall', RELEASE, '-n', OPS], adminKubeconfig);
    for (const ns of [WATCHED, OTHER, OPS]) kubectl(['delete', 'namespace', ns, '--wait=false']);
  });

  it('gives its service account what it needs in the watched namespace and nothing elsewhere', () => {
    expect(can('create', 'deployments.apps', '-n', WATCHED)).toBe('yes');
    expect(can('patch', 'clinicalsuites.clinicalsuite.ai', '--subresource=status', '-n', WATCHED)).toBe(
      'yes',
    );
    expect(can('get', 'secrets', '-n', WATCHED)).toBe('yes');
    // Secrets by name only, even where it works: no list or watch to read them all.
    expect(can('list', 'secrets', '-n', WATCHED)).toBe('no');
    expect(can('watch', 'secrets', '-n', WATCHED)).toBe('no');
    for (const [verb, resource] of [
      ['get', 'secrets'],
      ['list', 'secrets'],
      ['create', 'deployments.apps'],
      ['list', 'clinicalsuites.clinicalsuite.ai'],
      ['create', 'persistentvolumeclaims'],
    ] as const) {
      expect(`${verb} ${resource} in ${OTHER}: ${can(verb, resource, '-n', OTHER)}`).toBe(
        `${verb} ${resource} in ${OTHER}: no`,
      );
    }
    expect(can('list', 'secrets', '--all-namespaces')).toBe('no');
    expect(can('list', 'clinicalsuites.clinicalsuite.ai', '--all-namespaces')).toBe('no');
    expect(can('get', 'customresourcedefinitions.apiextensions.k8s.io')).toBe('no');

    // And with its own token: the API server refuses it a Secret of another namespace.
    kubectlOk([
      'create',
      'secret',
      'generic',
      'records-db',
      '-n',
      OTHER,
      '--from-literal=url=postgres://u:pw@db/x',
    ]);
    const stolen = run(
      bins.kubectl,
      ['get', 'secret', 'records-db', '-n', OTHER, '-o', 'yaml'],
      operatorKubeconfig,
    );
    expect(stolen.code).not.toBe(0);
    expect(stolen.err).toContain(
      `secrets "records-db" is forbidden: User "${SA}" cannot get resource "secrets"`,
    );
    expect(stolen.out).not.toContain('cG9zdGdyZXM6');
  });

  it('reconciles a suite in its watched namespace and leaves one in another namespace alone', async () => {
    kubectlOk(['apply', '-n', OTHER, '-f', '-'], suite('elsewhere', { ocr: { enabled: true } }));
    kubectlOk(['apply', '-n', WATCHED, '-f', '-'], suite('here', { ocr: { enabled: true } }));
    const waited = kubectl([
      'wait',
      '-n',
      WATCHED,
      '--for=condition=Ready',
      'clinicalsuite/here',
      '--timeout=90s',
    ]);
    expect(waited.err).toBe('');
    expect(waited.code).toBe(0);
    expect(kubectlOk(['get', 'deployments', '-n', WATCHED, '-o', 'name']).trim()).toBe(
      'deployment.apps/here-ocr',
    );
    await sleep(3000);
    expect(
      kubectlOk([
        'get',
        'deployments,configmaps,services',
        '-n',
        OTHER,
        '-l',
        'app.kubernetes.io/managed-by=clinicalsuite-operator',
        '-o',
        'name',
      ]).trim(),
    ).toBe('');
    expect(kubectlOk(['get', 'clinicalsuite', 'elsewhere', '-n', OTHER, '-o', 'jsonpath={.status}'])).toBe(
      '',
    );
    // It never even tried: no request of it was refused.
    expect(log).not.toMatch(/forbidden/i);
  }, 150_000);

  it('runs no pod reading a Secret its owner did not make usable by suites, until the owner labels it', async () => {
    kubectlOk([
      'create',
      'secret',
      'generic',
      'hospital-db',
      '-n',
      WATCHED,
      '--from-literal=url=postgres://u:pw@db/x',
    ]);
    kubectlOk(
      ['apply', '-n', WATCHED, '-f', '-'],
      suite('tasks', {
        taskAgent: {
          enabled: true,
          env: [{ name: 'DATABASE_URL', valueFrom: { secretKeyRef: { name: 'hospital-db', key: 'url' } } }],
        },
      }),
    );
    const degraded = await eventually('the refusal', () => {
      const c = conditionOf(WATCHED, 'tasks', 'Degraded', 'taskAgent');
      return c.startsWith('True') ? c : undefined;
    });
    expect(degraded).toBe(
      "True ReferenceNotAllowed Secret hospital-db (env DATABASE_URL of container task-agent) is not allowed: a suite's " +
        'pods may read only the Secrets the operator makes for the suite, Secrets labelled ' +
        "clinicalsuite.ai/usable-by-suites=true and none listed in the operator's allowedSecretRefs.names",
    );
    expect(kubectl(['get', 'deployment', 'tasks-task-agent', '-n', WATCHED]).code).not.toBe(0);

    kubectlOk(['label', 'secret', 'hospital-db', '-n', WATCHED, 'clinicalsuite.ai/usable-by-suites=true']);
    const waited = kubectl([
      'wait',
      '-n',
      WATCHED,
      '--for=condition=Ready',
      'clinicalsuite/tasks',
      '--timeout=90s',
    ]);
    expect(waited.code).toBe(0);
  }, 150_000);

  it('keeps a plain DATABASE_URL with its password out of ConfigMaps and Deployments', () => {
    const password = `pw-${id}-never-in-a-configmap`;
    kubectlOk(
      ['apply', '-n', WATCHED, '-f', '-'],
      suite('plain', {
        taskAgent: {
          enabled: true,
          env: [{ name: 'DATABASE_URL', value: `postgres://tasks:${password}@db.${WATCHED}.svc/tasks` }],
        },
        taskProxy: { enabled: true },
      }),
    );
    expect(
      kubectl(['wait', '-n', WATCHED, '--for=condition=Ready', 'clinicalsuite/plain', '--timeout=90s']).code,
    ).toBe(0);
    const readable = kubectlOk([
      'get',
      'configmaps,deployments,replicasets,pods',
      '-n',
      WATCHED,
      '-l',
      'app.kubernetes.io/instance=plain',
      '-o',
      'json',
    ]);
    expect(readable).toContain('plain-env-secrets');
    expect(readable).not.toContain(password);
    const data = JSON.parse(
      kubectlOk(['get', 'secret', 'plain-env-secrets', '-n', WATCHED, '-o', 'jsonpath={.data}']),
    ) as Record<string, string>;
    expect(Object.values(data).map((v) => Buffer.from(v, 'base64').toString())).toContain(
      `postgres://tasks:${password}@db.${WATCHED}.svc/tasks`,
    );
    const events = kubectlOk([
      'get',
      'events',
      '-n',
      WATCHED,
      '--field-selector',
      'involvedObject.name=plain,reason=PlainCredential',
      '-o',
      'jsonpath={.items[*].message}',
    ]);
    expect(events).toContain(
      'spec.services.taskAgent.env[0] (DATABASE_URL) is a plain value that holds a credential',
    );
  }, 150_000);
});
