/**
 * The operator as users run it, against the real test control plane: the built operator
 * (`operator/dist/main.js`) as a process with a kubeconfig, suites applied with the real kubectl,
 * readiness awaited with `kubectl wait`. Each test works in its own namespace.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse, stringify } from 'yaml';
import { up, type ClusterInfo } from '../../operator/src/dev/cluster/cluster.js';
import {
  binaries,
  clusterLayout,
  missingBinaries,
  readVersions,
} from '../../operator/src/dev/cluster/layout.js';

const REPO = new URL('../../', import.meta.url).pathname;
const OPERATOR = join(REPO, 'operator', 'dist', 'main.js');
const skip = missingBinaries().length > 0 && process.env['CLUSTER_TESTS'] === 'skip';
const SETUP_TIMEOUT_MS = missingBinaries().length > 0 ? 90 * 60_000 : 3 * 60_000;

let info: ClusterInfo;
let kubectlPath: string;

function kubectl(args: string[], input?: string): { code: number; out: string; err: string } {
  const r = spawnSync(kubectlPath, args, {
    env: { ...process.env, KUBECONFIG: info.kubeconfig },
    input,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

function kubectlOk(args: string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.err}`);
  return r.out;
}

/** `kubectl get … -o json`, parsed (the caller states the shape it reads). */
const jsonOf = (args: string[]): unknown => JSON.parse(kubectlOk([...args, '-o', 'json']));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

interface Operator {
  readonly child: ChildProcess;
  readonly port: number;
  log(): string;
  writes(): Promise<number>;
}

async function startOperator(lease: string): Promise<Operator> {
  const port = await freePort();
  let log = '';
  const child = spawn(process.execPath, [OPERATOR], {
    env: {
      PATH: process.env['PATH'],
      KUBECONFIG: info.kubeconfig,
      PORT: String(port),
      HOST: '127.0.0.1',
      POD_NAMESPACE: 'default',
      LEASE_NAME: lease,
      LEASE_DURATION_SECONDS: '4',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (c: Buffer) => (log += c.toString()));
  child.stderr.on('data', (c: Buffer) => (log += c.toString()));
  return {
    child,
    port,
    log: () => log,
    async writes() {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return [...text.matchAll(/^clinicalsuite_operator_api_writes_total\{[^}]*\} (\d+)/gm)].reduce(
        (sum, m) => sum + Number(m[1]),
        0,
      );
    },
  };
}

async function eventually<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const namespaces: string[] = [];
function namespace(name: string): string {
  const ns = `${name}-${Date.now().toString(36)}`;
  kubectlOk(['create', 'namespace', ns]);
  namespaces.push(ns);
  return ns;
}

/** A sample from crds/samples, with kind's `standard` storage class swapped for the test cluster's. */
function sample(name: string): string {
  return readFileSync(join(REPO, 'crds', 'samples', `${name}.yaml`), 'utf8').replaceAll(
    'storageClass: standard',
    'storageClass: kwok-volume',
  );
}

interface Deployment {
  metadata: { name: string; generation: number };
}

function deploymentGenerations(ns: string): Record<string, number> {
  const list = jsonOf(['get', 'deployments', '-n', ns]) as { items: Deployment[] };
  return Object.fromEntries(list.items.map((d) => [d.metadata.name, d.metadata.generation]));
}

function readyMessage(ns: string, name: string): string {
  return kubectlOk([
    'get',
    'clinicalsuite',
    name,
    '-n',
    ns,
    '-o',
    'jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}',
  ]);
}

(skip ? describe.skip : describe)('the operator on a real control plane', () => {
  let operator: Operator;
  let operatorStarted = false;
  const extra: ChildProcess[] = [];
  const lease = `operator-test-${Date.now().toString(36)}`;

  beforeAll(async () => {
    info = await up({ log: (line) => process.stderr.write(`cluster: ${line}\n`) });
    kubectlPath = binaries(clusterLayout(), readVersions()).kubectl;
    kubectlOk(['apply', '--server-side', '-f', join(REPO, 'crds', 'clinicalsuite.ai_clinicalsuites.yaml')]);
    // Polled, not `kubectl wait --for=condition=Established`: kubectl fails at once ("accessor
    // error: <nil>") when it reads the CRD before the API server has written any condition.
    await eventually('the CRD to be established', () =>
      kubectl([
        'get',
        'crd/clinicalsuites.clinicalsuite.ai',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Established")].status}',
      ]).out.trim() === 'True'
        ? true
        : undefined,
    );
    operator = await startOperator(lease);
    operatorStarted = true;
    await eventually('the operator to lead', () => (operator.log().includes('"leading') ? true : undefined));
  }, SETUP_TIMEOUT_MS);

  afterAll(() => {
    for (const ns of namespaces) kubectl(['delete', 'namespace', ns, '--wait=false']);
    // A failed setup leaves no operator to stop; say nothing more than its own error.
    if (operatorStarted) operator.child.kill('SIGTERM');
    for (const child of extra) child.kill('SIGKILL');
  });

  it('turns a kubectl-applied suite into Deployments that become Ready; kubectl wait returns', async () => {
    const ns = namespace('minimal');
    kubectlOk(['apply', '-n', ns, '-f', '-'], sample('minimal-cpu'));
    const waited = kubectl([
      'wait',
      '-n',
      ns,
      '--for=condition=Ready',
      'clinicalsuite/minimal-cpu',
      '--timeout=90s',
    ]);
    expect(waited.code).toBe(0);
    expect(Object.keys(deploymentGenerations(ns)).sort()).toEqual([
      'minimal-cpu-agent',
      'minimal-cpu-codesearch',
      'minimal-cpu-llm',
    ]);
    const row = kubectlOk(['get', 'clinicalsuite', 'minimal-cpu', '-n', ns, '--no-headers']);
    expect(row).toMatch(/^minimal-cpu\s+True\s+3\/3\s+/);

    // Each meaningful step is an event on the suite (the Ready one follows the status write).
    type Events = { items: { type: string; reason: string; message: string }[] };
    const events = await eventually('the Ready event', () => {
      const list = jsonOf([
        'get',
        'events',
        '-n',
        ns,
        '--field-selector',
        'involvedObject.kind=ClinicalSuite',
      ]) as Events;
      return list.items.some((e) => e.reason === 'AllServicesReady') ? list : undefined;
    });
    expect(events.items.find((e) => e.reason === 'AllServicesReady')).toMatchObject({
      type: 'Normal',
      message: '3/3 services ready',
    });
    expect(events.items.find((e) => e.reason === 'Applied')?.message).toMatch(/^\w+: applied /);

    // A reconcile with nothing changed writes nothing.
    const before = await operator.writes();
    kubectlOk(['annotate', 'clinicalsuite', 'minimal-cpu', '-n', ns, 'poke=1']);
    await sleep(2000);
    expect(await operator.writes()).toBe(before);

    // A concurrency change rolls that service only.
    const generations = deploymentGenerations(ns);
    kubectlOk([
      'patch',
      'clinicalsuite',
      'minimal-cpu',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"spec":{"services":{"codeSearch":{"concurrency":7}}}}',
    ]);
    await eventually('codesearch to roll', () => {
      const now = deploymentGenerations(ns);
      return now['minimal-cpu-codesearch'] !== generations['minimal-cpu-codesearch'] ? now : undefined;
    }).then((now) => {
      expect(now['minimal-cpu-llm']).toBe(generations['minimal-cpu-llm']);
      expect(now['minimal-cpu-agent']).toBe(generations['minimal-cpu-agent']);
    });
    const cm = jsonOf(['get', 'configmap', 'minimal-cpu-codesearch', '-n', ns]) as {
      data: Record<string, string>;
    };
    expect(cm.data['MAX_CONCURRENCY']).toBe('7');

    // Disabling a service removes its objects.
    kubectlOk([
      'patch',
      'clinicalsuite',
      'minimal-cpu',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"spec":{"services":{"agent":{"enabled":false}}}}',
    ]);
    await eventually('the agent objects to go', () =>
      kubectl(['get', 'deployment,service,configmap', 'minimal-cpu-agent', '-n', ns]).code !== 0
        ? true
        : undefined,
    );
    expect(
      kubectl(['wait', '-n', ns, '--for=condition=Ready', 'clinicalsuite/minimal-cpu', '--timeout=60s']).code,
    ).toBe(0);
  }, 180_000);

  it('schedules GPU services onto GPU nodes, and says so when no node has enough GPUs', async () => {
    const ns = namespace('gpu');
    kubectlOk(['apply', '-n', ns, '-f', '-'], sample('gpu'));
    expect(
      kubectl(['wait', '-n', ns, '--for=condition=Ready', 'clinicalsuite/gpu', '--timeout=90s']).code,
    ).toBe(0);
    const pods = jsonOf(['get', 'pods', '-n', ns, '-l', 'app.kubernetes.io/name=llm']) as {
      items: { spec: { nodeName: string } }[];
    };
    expect(pods.items.map((p) => p.spec.nodeName)).toEqual([expect.stringMatching(/^kwok-gpu-l4-/)]);

    const big = {
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      metadata: { name: 'big' },
      spec: { services: { llm: { enabled: true, resourceProfile: 'nvidia-gpu-l4:8' } } },
    };
    kubectlOk(['apply', '-n', ns, '-f', '-'], stringify(big));
    const message = await eventually('big to report why it is not ready', () => {
      const m = readyMessage(ns, 'big');
      return m.includes('Insufficient nvidia.com/gpu') ? m : undefined;
    });
    expect(message).toMatch(
      /^False llm: pod big-llm-\S+ cannot be scheduled: 0\/4 nodes are available: .*Insufficient nvidia\.com\/gpu/,
    );
  }, 180_000);

  it('rejects bad specs in the API server with messages naming the field', () => {
    const bad = (services: unknown) =>
      kubectl(
        ['apply', '--dry-run=server', '-n', 'default', '-f', '-'],
        stringify({
          apiVersion: 'clinicalsuite.ai/v1alpha1',
          kind: 'ClinicalSuite',
          metadata: { name: 'bad' },
          spec: { services },
        }),
      );
    const zero = bad({ llm: { enabled: true, concurrency: 0 } });
    expect(zero.code).not.toBe(0);
    expect(zero.err).toMatch(
      /spec\.services\.llm\.concurrency: Invalid value: 0: spec\.services\.llm\.concurrency in body should be greater than or equal to 1/,
    );
    const profile = bad({ llm: { enabled: true, resourceProfile: 'l4 please' } });
    expect(profile.err).toMatch(/spec\.services\.llm\.resourceProfile: Invalid value: "l4 please"/);
    const typo = bad({ lmm: { enabled: true } });
    expect(typo.err).toMatch(/unknown field "spec\.services\.lmm"/);
    const faces = bad({ face: { enabled: true, replicas: 2 } });
    expect(faces.err).toMatch(
      /spec\.services\.face: Invalid value: .*more than one replica needs env DATABASE_URL/,
    );
    // medllm's projector: only where a component has one, with a source or file, beside a model.
    const projector = { source: 'hf://o/r/mmproj.gguf' };
    expect(bad({ llm: { model: { source: 'hf://o/r/m.gguf', projector } } }).err).toMatch(
      /spec\.services\.llm: Invalid value: .*llm takes no multimodal projector: model\.projector is only for medllm/,
    );
    expect(bad({ medllm: { model: { source: 'hf://o/r/m.gguf', projector: {} } } }).err).toMatch(
      /spec\.services\.medllm\.model\.projector: Invalid value: .*projector needs a source or a file/,
    );
    expect(bad({ medllm: { model: { projector } } }).err).toMatch(
      /spec\.services\.medllm\.model: Invalid value: .*projector goes with a model on the model volume/,
    );
  });

  it('reports a dependsOn cycle (which the CRD cannot check) as InvalidSpec in status', async () => {
    const ns = namespace('cycle');
    const cyclic = {
      apiVersion: 'clinicalsuite.ai/v1alpha1',
      kind: 'ClinicalSuite',
      metadata: { name: 'cycle' },
      spec: {
        services: {
          llm: { enabled: true, dependsOn: ['agent'] },
          agent: { enabled: true, dependsOn: ['llm'] },
        },
      },
    };
    kubectlOk(['apply', '-n', ns, '-f', '-'], stringify(cyclic));
    const message = await eventually('the InvalidSpec condition', () => {
      const m = readyMessage(ns, 'cycle');
      return m.startsWith('False') ? m : undefined;
    });
    expect(message).toMatch(/cycle/i);
    expect(kubectlOk(['get', 'deployments', '-n', ns, '-o', 'name']).trim()).toBe('');
  });

  it('garbage-collects a deleted suite but keeps retained model volumes', async () => {
    const ns = namespace('retain');
    const suite = parse(sample('minimal-cpu')) as { spec: Record<string, unknown> };
    suite.spec['retainModels'] = true;
    kubectlOk(['apply', '-n', ns, '-f', '-'], stringify(suite));
    expect(
      kubectl(['wait', '-n', ns, '--for=condition=Ready', 'clinicalsuite/minimal-cpu', '--timeout=90s']).code,
    ).toBe(0);
    kubectlOk(['delete', 'clinicalsuite', 'minimal-cpu', '-n', ns, '--wait=true']);
    await eventually('garbage collection', () =>
      kubectl(['get', 'deployments', '-n', ns, '--no-headers']).out.trim() === '' ? true : undefined,
    );
    // Every component with a model keeps its volume (the llm's GGUF, code search's embedder and sets).
    expect(kubectlOk(['get', 'pvc', '-n', ns, '-o', 'name']).trim().split('\n').sort()).toEqual([
      'persistentvolumeclaim/minimal-cpu-codesearch-models',
      'persistentvolumeclaim/minimal-cpu-llm-models',
    ]);
  }, 180_000);

  it('keeps an embedded store on its data PVC: Recreate, never deleted by a spec change, Pending reported', async () => {
    const ns = namespace('store');
    const DATABASE_URL = { name: 'DATABASE_URL', value: 'postgres://tasks@postgres.db.svc:5432/tasks' };
    const suite = (taskAgent: Record<string, unknown>) =>
      stringify({
        apiVersion: 'clinicalsuite.ai/v1alpha1',
        kind: 'ClinicalSuite',
        metadata: { name: 'store' },
        spec: { services: { taskAgent: { enabled: true, ...taskAgent } } },
      });
    type Claim = { metadata: { ownerReferences?: { uid: string }[] }; status?: { phase?: string } };
    type Strategy = { spec: { strategy: Record<string, unknown> } };
    const deployment = () => jsonOf(['get', 'deployment', 'store-task-agent', '-n', ns]) as Strategy;
    const dataVolume = () =>
      kubectlOk([
        'get',
        'deployment',
        'store-task-agent',
        '-n',
        ns,
        '-o',
        'jsonpath={.spec.template.spec.volumes[?(@.name=="data")]}',
      ]);
    const waitReady = (name: string) =>
      kubectl(['wait', '-n', ns, '--for=condition=Ready', `clinicalsuite/${name}`, '--timeout=90s']).code;

    // With a shared database: an emptyDir, a rolling update, no claim.
    kubectlOk(['apply', '-n', ns, '-f', '-'], suite({ env: [DATABASE_URL] }));
    expect(waitReady('store')).toBe(0);
    expect(deployment().spec.strategy).toMatchObject({ type: 'RollingUpdate' });
    expect(JSON.parse(dataVolume())).toEqual({ name: 'data', emptyDir: {} });
    expect(kubectl(['get', 'pvc', 'store-task-agent-data', '-n', ns]).code).not.toBe(0);

    // Its embedded SQLite store (owned, to show a spec change spares even an owned claim): the claim
    // binds, the running Deployment switches to Recreate and mounts it, the suite is Ready again.
    kubectlOk(['apply', '-n', ns, '-f', '-'], suite({ storage: { retainOnDelete: false } }));
    await eventually('the Deployment to mount the claim', () =>
      dataVolume().includes('store-task-agent-data') ? true : undefined,
    );
    expect(deployment().spec.strategy).toEqual({ type: 'Recreate' });
    expect(waitReady('store')).toBe(0);
    const uid = kubectlOk(['get', 'clinicalsuite', 'store', '-n', ns, '-o', 'jsonpath={.metadata.uid}']);
    const claim = jsonOf(['get', 'pvc', 'store-task-agent-data', '-n', ns]) as Claim;
    expect(claim.status?.phase).toBe('Bound');
    expect(claim.metadata.ownerReferences?.map((o) => o.uid)).toEqual([uid]);

    // Disabling the service removes its workload, not its data.
    kubectlOk([
      'patch',
      'clinicalsuite',
      'store',
      '-n',
      ns,
      '--type=merge',
      '-p',
      '{"spec":{"services":{"taskAgent":{"enabled":false}}}}',
    ]);
    await eventually('the task agent Deployment to go', () =>
      kubectl(['get', 'deployment', 'store-task-agent', '-n', ns]).code !== 0 ? true : undefined,
    );
    expect(waitReady('store')).toBe(0);
    expect(kubectl(['get', 'pvc', 'store-task-agent-data', '-n', ns]).code).toBe(0);

    // A claim that cannot bind keeps the service from Ready and is named in its condition; retained
    // by default, it outlives its suite.
    kubectlOk(
      ['apply', '-n', ns, '-f', '-'],
      suite({ storage: { storageClass: 'no-such-class' } }).replace('name: store', 'name: pending'),
    );
    const message = await eventually('the pending data claim to be reported', () => {
      const m = readyMessage(ns, 'pending');
      return m.includes('pending-task-agent-data') ? m : undefined;
    });
    expect(message).toBe(
      'False taskAgent: data PersistentVolumeClaim pending-task-agent-data is Pending: no volume is bound yet (check its storage class)',
    );
    kubectlOk(['delete', 'clinicalsuite', 'pending', 'store', '-n', ns, '--wait=true']);
    await eventually('garbage collection of the owned claim', () =>
      kubectl(['get', 'pvc', 'store-task-agent-data', '-n', ns]).code !== 0 ? true : undefined,
    );
    expect(kubectlOk(['get', 'pvc', '-n', ns, '-o', 'name']).trim()).toBe(
      'persistentvolumeclaim/pending-task-agent-data',
    );
  }, 240_000);

  it('elects one leader: a second operator stands by, takes over when the first dies, and converges', async () => {
    const second = await startOperator(lease);
    extra.push(second.child);
    await eventually('the second to wait', () =>
      second.log().includes('waiting to lead') ? true : undefined,
    );
    await sleep(3000);
    expect(second.log()).not.toContain('"leading');
    expect(await second.writes()).toBe(0);

    // The leader dies mid-work; the stand-by takes over and converges a suite applied meanwhile.
    const ns = namespace('failover');
    kubectlOk(['apply', '-n', ns, '-f', '-'], sample('minimal-cpu'));
    operator.child.kill('SIGKILL');
    await eventually(
      'the second to lead',
      () => (second.log().includes('"leading') ? true : undefined),
      30_000,
    );
    expect(
      kubectl(['wait', '-n', ns, '--for=condition=Ready', 'clinicalsuite/minimal-cpu', '--timeout=90s']).code,
    ).toBe(0);
    expect(await second.writes()).toBeGreaterThan(0);
  }, 180_000);
});
