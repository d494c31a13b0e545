// Operator benchmark on the test control plane (`npm run bench:operator`): time from `kubectl apply`
// to every Deployment created and to Ready, for 1 and for 50 suites; API writes of a no-op
// reconcile (must be 0); the operator's memory with 50 suites. Pods are kwok's, so "Ready" measures
// the operator and the control plane, not image pulls or model loads.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { up } from '../../../tools/cluster/dist/cluster.js';
import { binaries, clusterLayout, readVersions } from '../../../tools/cluster/dist/layout.js';

const REPO = new URL('../../../', import.meta.url).pathname;
const info = await up({ log: (line) => process.stderr.write(`cluster: ${line}\n`) });
const kubectlBin = binaries(clusterLayout(), readVersions()).kubectl;
const env = { ...process.env, KUBECONFIG: info.kubeconfig };
const kubectl = (args, input) => {
  const r = spawnSync(kubectlBin, args, { env, input, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
kubectl(['apply', '--server-side', '-f', join(REPO, 'crds', 'clinicalsuite.ai_clinicalsuites.yaml')]);

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const operator = spawn(process.execPath, [join(REPO, 'operator', 'dist', 'main.js')], {
  env: {
    PATH: process.env.PATH,
    KUBECONFIG: info.kubeconfig,
    PORT: String(port),
    HOST: '127.0.0.1',
    LEASE_NAME: `bench-${Date.now()}`,
    LOG_LEVEL: 'warn',
    WORKERS: '4',
  },
  stdio: ['ignore', 'ignore', 'inherit'],
});
operator.on('exit', (code) => {
  if (code !== null && code !== 0) throw new Error(`the operator exited with code ${code}`);
});
const metrics = async () => await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
const sum = (text, name) =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, 'gm'))].reduce(
    (a, m) => a + Number(m[1]),
    0,
  );
for (;;) {
  try {
    await metrics();
    break;
  } catch {
    await sleep(200);
  }
}

const suite = (name) => `apiVersion: clinicalsuite.ai/v1alpha1
kind: ClinicalSuite
metadata: {name: ${name}}
spec:
  services:
    llm: {enabled: true, resources: {requests: {cpu: 10m, memory: 32Mi}}}
    codeSearch: {enabled: true, resources: {requests: {cpu: 10m, memory: 32Mi}}}
    agent: {enabled: true, resources: {requests: {cpu: 10m, memory: 32Mi}}}
`;

// Tiny explicit requests: 150 pods must fit on the two fake CPU nodes.
async function run(count) {
  const ns = `bench-${count}-${Date.now().toString(36)}`;
  kubectl(['create', 'namespace', ns]);
  const names = Array.from({ length: count }, (_, i) => `s${i}`);
  const t0 = performance.now();
  kubectl(['apply', '-n', ns, '-f', '-'], names.map(suite).join('---\n'));
  let created;
  let ready;
  const deadline = Date.now() + 10 * 60_000;
  while (ready === undefined) {
    if (Date.now() > deadline) throw new Error(`${count} suite(s) not Ready after 10 minutes`);
    const deployments = JSON.parse(kubectl(['get', 'deployments', '-n', ns, '-o', 'json'])).items.length;
    if (created === undefined && deployments === count * 3) created = performance.now() - t0;
    const suites = JSON.parse(kubectl(['get', 'clinicalsuites', '-n', ns, '-o', 'json'])).items;
    const readyCount = suites.filter((s) =>
      s.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
    if (readyCount === count) ready = performance.now() - t0;
    else await sleep(200);
  }
  return { ns, created: created ?? ready, ready };
}

const one = await run(1);
const fifty = await run(50);
await sleep(3000);
const byKind = (text) =>
  Object.fromEntries(
    [
      ...text.matchAll(
        /^clinicalsuite_operator_api_writes_total\{verb="([^"]+)",kind="([^"]+)"[^}]*\} (\d+)$/gm,
      ),
    ].map((m) => [`${m[1]} ${m[2]}`, Number(m[3])]),
  );
const kindsBefore = byKind(await metrics());
const before = sum(await metrics(), 'clinicalsuite_operator_api_writes_total');
const reconcilesBefore = sum(await metrics(), 'controller_runtime_reconcile_total');
// A no-op reconcile of every suite: touch an annotation (no spec change), then count writes.
kubectl(['annotate', 'clinicalsuites', '--all', '-n', fifty.ns, `bench-poke=${Date.now()}`, '--overwrite']);
await sleep(5000);
const text = await metrics();
const writes = sum(text, 'clinicalsuite_operator_api_writes_total') - before;
const reconciles = sum(text, 'controller_runtime_reconcile_total') - reconcilesBefore;
const rss = sum(text, 'process_resident_memory_bytes');
const heap = sum(text, 'nodejs_heap_size_used_bytes');
const kindsAfter = byKind(text);
const writesByKind = Object.entries(kindsAfter)
  .map(([k, n]) => [k, n - (kindsBefore[k] ?? 0)])
  .filter(([, n]) => n > 0);
operator.kill('SIGTERM');
for (const ns of [one.ns, fifty.ns]) kubectl(['delete', 'namespace', ns, '--wait=false']);

const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log('operator benchmark (test control plane, kwok nodes, 3 services per suite, 4 workers)');
console.log(`  1 suite:   deployments created ${s(one.created)}, Ready ${s(one.ready)}`);
console.log(`  50 suites: deployments created ${s(fifty.created)}, Ready ${s(fifty.ready)}`);
console.log(`  ratio 50/1 time to Ready: ${(fifty.ready / one.ready).toFixed(1)}x for 50x the suites`);
console.log(
  `  no-op reconciles: ${reconciles}, API writes: ${writes} (${reconciles > 0 ? (writes / reconciles).toFixed(2) : '-'} per reconcile; must be 0)`,
);
if (writesByKind.length > 0)
  console.log(`  writes during the no-op round: ${writesByKind.map(([k, n]) => `${k}=${n}`).join(', ')}`);
console.log(
  `  operator memory with 50 suites: ${(rss / 1048576).toFixed(0)} MiB RSS, ${(heap / 1048576).toFixed(0)} MiB heap used`,
);
process.exit(0);
