/**
 * The suite on a real node, end to end (`npm run e2e:node`; test/node/README.md): the test cluster
 * with a real kubelet (`up --node`), the suite's image built with buildah and loaded into the
 * node's containerd, the operator installed by the Helm chart as a pod, a CPU suite applied with
 * kubectl, then the services called from pods in the cluster, the operator's failure reasons and
 * resync on real pods, Prometheus scraping them, and `down` leaving nothing behind. Each test is a
 * step, in order; a step that cannot run because an earlier one failed says which.
 *
 * The cluster has its own CLINICALSUITE_HOME (`<home>/e2e-node`, binaries shared with the default
 * one), so a developer's kwok cluster is left alone. E2E_NODE_KEEP=1 keeps it up at the end.
 */
import { afterAll, describe, expect, test } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { down, ensureBuilt, up } from '../../tools/cluster/src/cluster.js';
import { binaries, clusterLayout, readVersions } from '../../tools/cluster/src/layout.js';
import { NODE_HOST_IP, NODE_NAME } from '../../tools/cluster/src/node-config.js';
import { loadImages, missingNodePrograms, nodeLeftovers } from '../../tools/cluster/src/node.js';
import { ensureFacePhotos } from '../fixtures/photos/face-photos.js';
import { kube, serviceCondition, until, type Kube, type SuiteObject } from './kube.js';
import { serveMirror, type Mirror } from './mirror.js';
import { IMAGE_REF, mainSuite, NAMESPACE, ocrSuite, SUITE } from './suites.js';
import { MONITORING, prometheusObjects, PROMETHEUS_IMAGE } from './prometheus.js';
import { loadDashboards, substitute } from '../observability/prometheus/dashboards.js';
import { allValues, resolveVariables } from '../observability/prometheus/evaluate.js';
import { PrometheusApi } from '../observability/prometheus/server.js';
import { EN_NOTE as NOTE, renderNote } from '../ocr/pages.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const DEFAULT_HOME = process.env['CLINICALSUITE_HOME'] || join(homedir(), '.cache', 'clinicalsuite');
const sharedLayout = clusterLayout({ CLINICALSUITE_HOME: DEFAULT_HOME });
const layout = {
  ...clusterLayout({ CLINICALSUITE_HOME: join(DEFAULT_HOME, 'e2e-node') }),
  binDir: sharedLayout.binDir,
};
const KEEP = process.env['E2E_NODE_KEEP'] === '1';
const log = (line: string): void => void process.stderr.write(`e2e:node: ${line}\n`);

/** The catalogue models the suite's pods fetch from the mirror (the host's models directory). */
const MODELS = [
  'llm',
  'face-recognizer',
  'face-detector-retinaface',
  'face-detector',
  'codesearch-icd10cm',
  'codesearch-icd10pcs',
  'codesearch-e5',
  'codesearch-e5-tokenizer',
];

/** Where the checks and their files go in the client pods (their only writable place). */
const CLIENT_DIR = '/tmp/c';
/** checks.mjs's token variables, and the `<suite>-auth` keys they come from. */
const CHECK_TOKENS: Record<string, string> = {
  LLM_TOKEN: 'api-token',
  AGENT_TOKEN: 'agent-token',
  FACE_TOKEN: 'face-token',
  CODESEARCH_TOKEN: 'code-search-token',
  OCR_TOKEN: 'ocr-token',
  TASK_AGENT_TOKEN: 'task-agent-token',
  TASK_PROXY_USER: 'task-proxy-user',
  TASK_PROXY_PASSWORD: 'task-proxy-password',
};
/** The dashboards of services this suite runs (reasoning, GPU and medllm are not in it). */
const DASHBOARDS = ['overview.json', 'llm-serving.json', 'agent.json', 'face.json', 'operator.json'];
/** Grafana's $__rate_interval for this Prometheus's 5 s scrapes over a short test: a minute. */
const RATE_INTERVAL = '1m';
/** Panels that need what this run does not do; every other panel of DASHBOARDS must have series. */
const NO_DATA_HERE: readonly RegExp[] = [
  // No GPU on this node.
  /^overview\.json: GPU /,
  // medllm (llama-server, images, certainty phrases) is not in the suite.
  /^llm-serving\.json: (llama-server backend|Backend restarts|Images per request|Certainty phrases)/,
  // No generation is stopped early (a client gone, a deadline): that counter starts at its first.
  /^llm-serving\.json: Stopped generations by reason$/,
  // The agent's /shell is off, and the agent check's chat calls no sub-service.
  /^agent\.json: (Shell attempts|Sub-service )/,
];

let prom: PrometheusApi | undefined;
let k: Kube | undefined;
let mirror: Mirror | undefined;
const done = new Set<string>();
/** Fails the step at once when a step it needs did not pass. */
function after(...steps: string[]): void {
  for (const s of steps) if (!done.has(s)) throw new Error(`not run: the step "${s}" did not pass`);
}
/** The same, for steps that use the cluster. */
function needs(...steps: string[]): Kube {
  after(...steps);
  if (k === undefined) throw new Error('not run: the cluster is not up');
  return k;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    let tail = '';
    const child = spawn(cmd, args, {
      cwd: REPO,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer): void => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${tail}`)),
    );
  });
}

afterAll(async () => {
  await mirror?.close();
  if (!KEEP) await down({ layout, log });
  else log(`kept: export KUBECONFIG=${layout.kubeconfig}`);
}, 120_000);

/**
 * What this machine must give: root (namespaces, mounts, cgroups, iptables) and Debian's node
 * programs. Without them the run fails under CI=true, and is skipped elsewhere, saying why.
 */
const missing = [
  ...(process.getuid?.() === 0 ? [] : ['root (the node needs namespaces, mounts, cgroups and iptables)']),
  ...missingNodePrograms(),
];
const CI = process.env['CI'] === 'true';
if (missing.length > 0) {
  const why = `the real-node run needs ${missing.join(', ')} (operator/debian-packages.txt, test lines)`;
  if (CI) {
    test('preconditions', () => {
      throw new Error(why);
    });
  } else {
    process.stderr.write(`e2e:node: skipped: ${why}\n`);
  }
}

(missing.length > 0 ? describe.skip : describe)('the suite on a real node', () => {
  test(
    'build: control plane and node binaries, node images, the suite image (buildah), models',
    async () => {
      await ensureBuilt(log, sharedLayout, true);
      await run('bash', ['test/image/build.sh'], { IMAGE: IMAGE_REF });
      await run('bash', ['test/cluster/build.sh', 'prometheus'], { CLINICALSUITE_HOME: DEFAULT_HOME });
      await run('bash', [
        'test/node/prometheus-image.sh',
        join(sharedLayout.binDir, `prometheus-${readVersions().prometheus}`),
      ]);
      for (const id of MODELS) {
        await run(process.execPath, ['services/kit/dist/models/cli.js', 'fetch', id], {
          CLINICALSUITE_HOME: DEFAULT_HOME,
        });
      }
      await ensureFacePhotos();
      done.add('build');
    },
    90 * 60_000,
  );

  test(
    `cluster up --node: ${NODE_NAME} Ready beside kwok's GPU nodes`,
    async () => {
      after('build');
      const info = await up({ layout, build: false, node: true, log });
      const versions = readVersions();
      const bins = binaries(layout, versions);
      k = kube(bins.kubectl, bins.helm, info.kubeconfig);
      const nodes = await k.json<{
        items: { metadata: { name: string }; status: { nodeInfo: { containerRuntimeVersion: string } } }[];
      }>(['get', 'nodes']);
      const real = nodes?.items.find((n) => n.metadata.name === NODE_NAME);
      expect(real?.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\/1\./);
      expect(nodes?.items.map((n) => n.metadata.name).sort()).toEqual([
        NODE_NAME,
        'kwok-gpu-l4-1',
        'kwok-gpu-l4-2',
      ]);
      done.add('up');
    },
    10 * 60_000,
  );

  test(
    "images loaded into the node's containerd",
    async () => {
      needs('up');
      await loadImages(layout, [IMAGE_REF, PROMETHEUS_IMAGE], log);
      done.add('images');
    },
    10 * 60_000,
  );

  test(
    'the chart installs the operator as a pod on the real node',
    async () => {
      const kc = needs('images');
      await kc.helm([
        'upgrade',
        '--install',
        'cs',
        join(REPO, 'helm', 'clinical-suite'),
        '--namespace',
        'clinicalsuite-system',
        '--create-namespace',
        '-f',
        join(REPO, 'test', 'node', 'values.yaml'),
        '--set-string',
        'image.registry=localhost,image.repository=clinicalsuite,image.tag=dev',
        '--set',
        'image.pullPolicy=IfNotPresent',
        '--wait',
        '--timeout',
        '5m',
      ]);
      const pods = await kc.json<PodList>([
        'get',
        'pods',
        '-n',
        'clinicalsuite-system',
        '-l',
        'app.kubernetes.io/component=operator',
      ]);
      expect(pods?.items.map((p) => [p.spec.nodeName, p.status.phase])).toEqual([[NODE_NAME, 'Running']]);
      done.add('chart');
    },
    10 * 60_000,
  );

  test(
    'a CPU suite applied with kubectl becomes Ready, its models fetched from the host mirror',
    async () => {
      const kc = needs('chart');
      mirror = await serveMirror(join(DEFAULT_HOME, 'models'), NODE_HOST_IP);
      await kc.ok(['create', 'namespace', NAMESPACE]);
      await kc.ok(['apply', '-f', '-'], { input: mainSuite(mirror.url) });
      const wait = await kc.kubectl(
        ['wait', '--for=condition=Ready', `clinicalsuite/${SUITE}`, '-n', NAMESPACE, '--timeout=900s'],
        { timeoutMs: 910_000 },
      );
      const wide = await kc.ok(['get', 'pods', '-A', '-o', 'wide']);
      log(`kubectl get pods -A -o wide\n${wide}`);
      expect(wait.err).toBe('');
      const pods = await kc.json<PodList>(['get', 'pods', '-n', NAMESPACE]);
      const placement = pods?.items
        .map(
          (p) => `${p.metadata.name.split('-').slice(0, -2).join('-')} ${p.status.phase} ${p.spec.nodeName}`,
        )
        .sort();
      expect(placement).toEqual(
        ['agent', 'codesearch', 'face', 'llm', 'ocr', 'task-agent', 'task-proxy'].map(
          (s) => `${SUITE}-${s} Running ${NODE_NAME}`,
        ),
      );
      expect(mirror.requests).toEqual(
        expect.arrayContaining(['/llm/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf', '/face/fr-feature-512.onnx']),
      );
      done.add('suite');
    },
    20 * 60_000,
  );

  // --- metrics from real pods --------------------------------------------------------------------

  test(
    'Prometheus scrapes every pod of the suite through kubernetes_sd_configs',
    async () => {
      const kc = needs('suite');
      await kc.ok(['apply', '-f', '-'], {
        input: prometheusObjects(REPO, NAMESPACE, 'clinicalsuite-system'),
      });
      await kc.ok(['wait', '--for=condition=Ready', 'pod/prometheus', '-n', MONITORING, '--timeout=180s'], {
        timeoutMs: 190_000,
      });
      const ip = (await kc.json<PodList['items'][number]>(['get', 'pod', 'prometheus', '-n', MONITORING]))
        ?.status.podIP;
      prom = new PrometheusApi(`http://${ip}:9090`);
      const services = ['agent', 'codesearch', 'face', 'llm', 'ocr', 'task_agent', 'task_proxy'];
      const up = await until('up == 1 for every service of the suite', 120_000, async () => {
        const r = await prom!.query(`up{namespace="${NAMESPACE}", suite="${SUITE}"} == 1`);
        const seen = [...new Set(r.result.map((s) => s.metric['service']))].sort();
        return services.every((s) => seen.includes(s)) ? seen : undefined;
      });
      expect(up).toEqual(services);
      done.add('prometheus');
    },
    5 * 60_000,
  );

  // --- answers inside the cluster -------------------------------------------------------------

  test(
    "client pods: one with the suite's labels, one outside the suite",
    async () => {
      const kc = needs('suite');
      const pod = (name: string, labels: Record<string, string>) => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NAMESPACE, labels },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'client',
              image: IMAGE_REF,
              imagePullPolicy: 'Never',
              command: ['node', '-e', 'setInterval(() => {}, 1 << 30)'],
              securityContext: { runAsUser: 10001, runAsNonRoot: true, allowPrivilegeEscalation: false },
            },
          ],
        },
      });
      const suiteLabels = {
        'app.kubernetes.io/instance': SUITE,
        'app.kubernetes.io/part-of': 'clinicalsuite',
      };
      await kc.ok(['apply', '-f', '-'], {
        input: [
          pod('client', { ...suiteLabels, 'app.kubernetes.io/name': 'e2e-client' }),
          pod('outsider', {}),
        ]
          .map((o) => stringify(o))
          .join('---\n'),
      });
      await kc.ok(
        ['wait', '--for=condition=Ready', 'pod/client', 'pod/outsider', '-n', NAMESPACE, '--timeout=120s'],
        {
          timeoutMs: 130_000,
        },
      );
      const files = mkdtempSync(join(tmpdir(), 'e2e-node-client-'));
      const photos = await ensureFacePhotos();
      writeFileSync(join(files, 'note.png'), await renderNote(NOTE));
      for (const target of ['client', 'outsider']) {
        await kc.ok(['exec', '-n', NAMESPACE, target, '--', 'mkdir', '-p', `${CLIENT_DIR}/node_modules`]);
        await kc.ok([
          'cp',
          join(REPO, 'test', 'node', 'client', 'checks.mjs'),
          `${NAMESPACE}/${target}:${CLIENT_DIR}/checks.mjs`,
        ]);
      }
      await kc.ok([
        'cp',
        join(REPO, 'node_modules', 'openai'),
        `${NAMESPACE}/client:${CLIENT_DIR}/node_modules/openai`,
      ]);
      for (const [name, path] of [
        ['obama.jpg', photos.obama],
        ['obama2.jpg', photos.obama2],
        ['biden.jpg', photos.biden],
        ['note.png', join(files, 'note.png')],
      ] as const) {
        await kc.ok(['cp', path, `${NAMESPACE}/client:${CLIENT_DIR}/${name}`]);
      }
      done.add('clients');
    },
    5 * 60_000,
  );

  const checks: [string, string, string[]][] = [
    ['llm', 'llm: a chat completion with the OpenAI SDK, by Service DNS name', []],
    ['agent', 'agent: /run answered by the llm through the Service the operator wired', []],
    [
      'face',
      'face: register and recognize on real photographs',
      [`${CLIENT_DIR}/obama.jpg`, `${CLIENT_DIR}/obama2.jpg`, `${CLIENT_DIR}/biden.jpg`],
    ],
    ['task', 'task proxy: sign in at login.php, a task runs to a result', []],
    ['codesearch', 'code search: type 2 diabetes mellitus finds E11', []],
    [
      'ocr',
      'OCR: a rendered clinical note read back',
      [`${CLIENT_DIR}/note.png`, 'COPD', '38.6', 'pneumonia', 'amoxicillin'],
    ],
  ];
  for (const [check, title, args] of checks) {
    test(
      `from a pod in the cluster: ${title}`,
      async () => {
        const kc = needs('clients');
        const out = await clientCheck(kc, 'client', check, args);
        log(`${check}: ${out}`);
        expect(JSON.parse(out)).toMatchObject({ check, ok: true });
      },
      6 * 60_000,
    );
  }

  test(
    'network policies: the suite reaches face, code search and OCR; a pod outside it is refused',
    async () => {
      const kc = needs('clients');
      const svc = (name: string) => `http://${SUITE}-${name}.${NAMESPACE}.svc.cluster.local:8080/readyz`;
      for (const internal of ['face', 'codesearch', 'ocr']) {
        expect(JSON.parse(await clientCheck(kc, 'client', 'reach', [svc(internal)]))).toMatchObject({
          ok: true,
          status: 200,
        });
        await expect(clientCheck(kc, 'outsider', 'reach', [svc(internal)])).rejects.toThrow(/not reached/);
      }
      // The front doors stay open to the cluster (their tokens guard them).
      for (const front of ['llm', 'agent', 'task-proxy']) {
        expect(JSON.parse(await clientCheck(kc, 'outsider', 'reach', [svc(front)]))).toMatchObject({
          ok: true,
        });
      }
    },
    5 * 60_000,
  );

  test(
    "the dashboards' queries return series for the suite's pods",
    async () => {
      needs('prometheus', 'clients');
      const dashboards = loadDashboards(join(REPO, 'helm', 'clinical-suite', 'dashboards')).filter((d) =>
        DASHBOARDS.includes(d.file),
      );
      const panels = new Map<string, boolean>();
      for (const dashboard of dashboards) {
        const values = {
          ...allValues(await resolveVariables(prom!, dashboard)),
          __rate_interval: RATE_INTERVAL,
        };
        for (const panel of dashboard.panels) {
          for (const target of panel.targets) {
            const n = (await prom!.query(substitute(target.expr, values))).result.length;
            const key = `${dashboard.file}: ${panel.title}`;
            panels.set(key, (panels.get(key) ?? false) || n > 0);
          }
        }
      }
      const empty = [...panels].filter(([, has]) => !has).map(([key]) => key);
      log(
        `dashboard panels with series: ${panels.size - empty.length} of ${panels.size}; without:\n  ${empty.join('\n  ')}`,
      );
      // Every panel has series but those NO_DATA_HERE names, with why.
      expect(empty.filter((key) => !NO_DATA_HERE.some((re) => re.test(key)))).toEqual([]);
    },
    5 * 60_000,
  );

  // --- failures read from real pods ------------------------------------------------------------

  const FAILURES = 'failures';
  const failure = (
    name: string,
    service: 'ocr' | 'llm',
    reason: string,
    message: RegExp,
    suite: () => string,
    prepare?: (kc: Kube) => Promise<void>,
  ) =>
    test(
      `${reason} on a real pod: ${name}`,
      async () => {
        const kc = needs('suite');
        if ((await kc.kubectl(['get', 'namespace', FAILURES])).code !== 0) {
          await kc.ok(['create', 'namespace', FAILURES]);
        }
        await prepare?.(kc);
        await kc.ok(['apply', '-f', '-'], { input: suite() });
        const name_ = (parse(suite()) as { metadata: { name: string } }).metadata.name;
        const condition = await until(
          `${name_}'s ${service} to report ${reason}`,
          240_000,
          async () => {
            const c = serviceCondition(
              await kc.json<SuiteObject>(['get', 'clinicalsuite', name_, '-n', FAILURES]),
              service,
              'Ready',
            );
            return c?.reason === reason ? c : undefined;
          },
          async () =>
            JSON.stringify(
              (await kc.json<SuiteObject>(['get', 'clinicalsuite', name_, '-n', FAILURES]))?.status,
            ),
        );
        log(`${reason}: ${condition.message ?? ''}`);
        expect(condition.status).toBe('False');
        expect(condition.message).toMatch(message);
        await kc.ok(['delete', 'clinicalsuite', name_, '-n', FAILURES, '--wait=false']);
      },
      5 * 60_000,
    );

  failure('an image that does not exist', 'ocr', 'ImagePullError', /ErrImagePull|ImagePullBackOff/, () =>
    ocrSuite('pull', FAILURES, {
      image: {
        registry: 'localhost',
        repository: 'clinicalsuite-missing',
        tag: 'none',
        pullPolicy: 'IfNotPresent',
      },
    }),
  );
  failure(
    'a service that exits at start',
    'ocr',
    'CrashLoop',
    /crash-looping.*last exit \(code 78\):[\s\S]*LOG_LEVEL/,
    () => ocrSuite('crash', FAILURES, {}, { env: [{ name: 'LOG_LEVEL', value: 'verbose' }] }),
  );
  failure(
    'a model source that fails',
    'llm',
    'ModelFetchFailed',
    /model fetch (failed|keeps failing):[\s\S]*models\.example\.invalid/,
    () =>
      stringify({
        apiVersion: 'clinicalsuite.ai/v1alpha1',
        kind: 'ClinicalSuite',
        metadata: { name: 'fetch', namespace: FAILURES },
        spec: {
          image: {
            registry: 'localhost',
            repository: 'clinicalsuite',
            tag: 'dev',
            pullPolicy: 'IfNotPresent',
          },
          services: {
            llm: {
              enabled: true,
              resourceProfile: 'cpu:1',
              model: {
                source: 'https://models.example.invalid/llm/no-such-model.gguf',
                file: 'no-such-model.gguf',
              },
            },
          },
        },
      }),
  );
  failure(
    'a Secret without the key a pod reads',
    'ocr',
    'ContainerConfigError',
    /CreateContainerConfigError[\s\S]*missing-key/,
    () =>
      ocrSuite(
        'config',
        FAILURES,
        {},
        {
          env: [
            { name: 'EXTRA_SETTING', valueFrom: { secretKeyRef: { name: 'ocr-extra', key: 'missing-key' } } },
          ],
        },
      ),
    // A Secret the suite may read (labelled so, as the chart's trust model asks), without that key.
    async (kc) => {
      await kc.ok(['apply', '-f', '-'], {
        input: stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: 'ocr-extra',
            namespace: FAILURES,
            labels: { 'clinicalsuite.ai/usable-by-suites': 'true' },
          },
          stringData: { 'other-key': 'value' },
        }),
      });
    },
  );

  // --- resync on the real API server -----------------------------------------------------------

  test(
    'resync takes back a kubectl scale and a kubectl edit of fields the operator owns',
    async () => {
      const kc = needs('suite');
      const deploy = `deployment/${SUITE}-ocr`;
      await kc.ok(['scale', deploy, '-n', NAMESPACE, '--replicas=3']);
      await kc.kubectl(['edit', deploy, '-n', NAMESPACE], {
        env: { KUBE_EDITOR: "sed -i -e 's/^\\(\\s*memory: \\)3Gi$/\\11234Mi/'" },
      });
      const edited = await kc.json<Deployment>(['get', deploy, '-n', NAMESPACE]);
      expect(edited?.spec.template.spec.containers[0]?.resources.limits?.['memory']).toBe('1234Mi');
      const back = await until(
        'the operator to take back replicas and the memory limit',
        120_000,
        async () => {
          const d = await kc.json<Deployment>(['get', deploy, '-n', NAMESPACE]);
          const limit = d?.spec.template.spec.containers[0]?.resources.limits?.['memory'];
          return d?.spec.replicas === 1 && limit === '3Gi' ? d : undefined;
        },
      );
      expect(back.spec.replicas).toBe(1);
    },
    5 * 60_000,
  );

  test(
    'a deleted pod, Service and auth Secret come back, and the suite answers again',
    async () => {
      const kc = needs('clients');
      const uid = async (kind: string, name: string) =>
        (await kc.json<{ metadata: { uid: string } }>(['get', kind, name, '-n', NAMESPACE]))?.metadata.uid;
      const ocrPod = async () =>
        (
          await kc.json<PodList>(['get', 'pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/component=ocr'])
        )?.items
          .map((p) => p.metadata.name)
          .sort()
          .join(',');
      const pod = await ocrPod();
      const service = await uid('service', `${SUITE}-ocr`);
      const secret = await uid('secret', `${SUITE}-auth`);
      await kc.ok([
        'delete',
        'pod',
        '-n',
        NAMESPACE,
        '-l',
        'app.kubernetes.io/component=ocr',
        '--wait=false',
      ]);
      await kc.ok(['delete', 'service', `${SUITE}-ocr`, '-n', NAMESPACE]);
      await kc.ok(['delete', 'secret', `${SUITE}-auth`, '-n', NAMESPACE]);
      await until('a new Service and auth Secret', 120_000, async () => {
        const [s, t] = [await uid('service', `${SUITE}-ocr`), await uid('secret', `${SUITE}-auth`)];
        return s !== undefined && s !== service && t !== undefined && t !== secret ? true : undefined;
      });
      expect(await ocrPod()).not.toBe(pod);
      // New tokens: every pod rolls onto them, then the suite is Ready and answers with them.
      await until('the suite Ready again on the new tokens', 600_000, async () => {
        const suite = await kc.json<SuiteObject & { status?: { observedGeneration?: number } }>([
          'get',
          'clinicalsuite',
          SUITE,
          '-n',
          NAMESPACE,
        ]);
        const ready = suite?.status?.conditions?.find((c) => c.type === 'Ready');
        if (ready?.status !== 'True') return undefined;
        const pods = await kc.json<PodList>([
          'get',
          'pods',
          '-n',
          NAMESPACE,
          '-l',
          'app.kubernetes.io/managed-by=clinicalsuite-operator',
        ]);
        return pods?.items.every(
          (p) => p.status.phase === 'Running' && p.metadata.deletionTimestamp === undefined,
        )
          ? true
          : undefined;
      });
      for (const check of ['llm', 'codesearch']) {
        expect(JSON.parse(await clientCheck(kc, 'client', check, []))).toMatchObject({ ok: true });
      }
    },
    12 * 60_000,
  );

  test(
    'the service-down alert fires for a pod that stops answering and clears when it is back',
    async () => {
      const kc = needs('prometheus');
      const firing = async () =>
        (await prom!.alerts()).filter(
          (a) =>
            a.labels['alertname'] === 'ClinicalSuiteServiceDown' &&
            a.labels['service'] === 'ocr' &&
            a.state === 'firing',
        );
      expect(await firing()).toEqual([]);
      const pod = (
        await kc.json<PodList>(['get', 'pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/component=ocr'])
      )?.items[0];
      if (pod === undefined) throw new Error('no OCR pod');
      // The container is frozen (its freezer cgroup, from the host): the pod is still there, its
      // port takes connections nobody answers. A signal from inside would not do: the service is
      // its container's PID 1, which the kernel shields from signals it has no handler for.
      const freezer = await containerFreezer(pod);
      await writeFile(freezer, 'FROZEN');
      try {
        await until('ClinicalSuiteServiceDown firing for ocr', 120_000, async () =>
          (await firing()).length > 0 ? true : undefined,
        );
      } finally {
        await writeFile(freezer, 'THAWED');
      }
      await until('ClinicalSuiteServiceDown cleared', 180_000, async () =>
        (await firing()).length === 0 ? true : undefined,
      );
      // A deleted pod: its replacement is scraped in its place.
      await kc.ok(['delete', 'pod', pod.metadata.name, '-n', NAMESPACE]);
      await until('up == 1 for the replacement ocr pod', 180_000, async () => {
        const r = await prom!.query(`up{namespace="${NAMESPACE}", service="ocr"} == 1`);
        return r.result.some((s) => s.metric['pod'] !== pod.metadata.name) ? true : undefined;
      });
    },
    10 * 60_000,
  );

  test(
    'cluster down leaves no process, namespace, link, route, cgroup or mount',
    async () => {
      after('up');
      await mirror?.close();
      mirror = undefined;
      if (KEEP) return;
      await down({ layout, log });
      expect(await nodeLeftovers(layout)).toEqual([]);
      expect(existsSync(layout.stateFile)).toBe(false);
    },
    5 * 60_000,
  );
});

interface PodList {
  items: {
    metadata: { name: string; uid: string; labels?: Record<string, string>; deletionTimestamp?: string };
    spec: { nodeName?: string };
    status: { phase: string; podIP?: string; containerStatuses?: { containerID?: string }[] };
  }[];
}

interface Deployment {
  spec: {
    replicas: number;
    template: { spec: { containers: { resources: { limits?: Record<string, string> } }[] } };
  };
}

/** The freezer cgroup v1 state file of a pod's first container (the kubelet's cgroupfs layout). */
async function containerFreezer(pod: PodList['items'][number]): Promise<string> {
  const id = pod.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
  if (id === undefined) throw new Error(`pod ${pod.metadata.name} has no container yet`);
  const root = '/sys/fs/cgroup/freezer/kubepods';
  for (const qos of ['', 'burstable', 'besteffort']) {
    const dir = join(root, qos, `pod${pod.metadata.uid}`, id);
    if ((await readdir(dir).catch(() => undefined)) !== undefined) return join(dir, 'freezer.state');
  }
  throw new Error(`no freezer cgroup for container ${id} of pod ${pod.metadata.name} under ${root}`);
}

/** Runs checks.mjs in a client pod with the suite's current tokens; its JSON line, or an error. */
async function clientCheck(kc: Kube, pod: string, check: string, args: readonly string[]): Promise<string> {
  const secret = await kc.json<{ data: Record<string, string> }>([
    'get',
    'secret',
    `${SUITE}-auth`,
    '-n',
    NAMESPACE,
  ]);
  const value = (key: string): string => Buffer.from(secret?.data[key] ?? '', 'base64').toString();
  const env = Object.entries(CHECK_TOKENS).map(([name, key]) => `${name}=${value(key)}`);
  const r = await kc.kubectl(
    [
      'exec',
      '-n',
      NAMESPACE,
      pod,
      '--',
      'env',
      ...env,
      'sh',
      '-c',
      `cd ${CLIENT_DIR} && exec node checks.mjs "$@"`,
      'checks',
      check,
      ...args,
    ],
    { timeoutMs: 330_000 },
  );
  if (r.code !== 0) throw new Error(`checks.mjs ${check} in ${pod}: ${r.err.trim() || r.out.trim()}`);
  return r.out.trim().split('\n').pop() ?? '';
}
