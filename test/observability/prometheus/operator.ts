/**
 * The operator for the Prometheus test: the built operator (operator/dist/main.js) against a real
 * control plane of its own (tools/cluster with the binaries test/cluster/build.sh cached,
 * its state in a temporary home, stopped and removed by stop()) with one small ClinicalSuite applied, so its controller-runtime metrics (reconciles, durations,
 * queue) carry data. Never builds the control plane: without cached binaries it says why and the
 * test leaves the operator's panels out.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { down, up } from '../../../tools/cluster/src/cluster.js';
import { binaries, clusterLayout, missingBinaries, readVersions } from '../../../tools/cluster/src/layout.js';
import { freePort } from '../../kit/helpers.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const OPERATOR = join(REPO, 'operator', 'dist', 'main.js');

export interface RunningOperator {
  readonly url: string;
  readonly namespace: string;
  log(): string;
  stop(): Promise<void>;
}

/** Starts the control plane (or reuses a running one) and the operator; `{ reason }` when it cannot. */
export async function startOperator(): Promise<RunningOperator | { reason: string }> {
  const missing = missingBinaries();
  if (missing.length > 0)
    return { reason: `the test control plane is not built (${missing.join(', ')}; test/cluster/build.sh)` };
  // A control plane of its own (the cached binaries, its own state under a temporary home): on the
  // shared one, this operator (watching every namespace) and test/cluster's operators, running at
  // the same time in the other jest worker, would reconcile each other's suites, count each other's
  // writes and fight over them.
  const home = mkdtempSync(join(tmpdir(), 'clinicalsuite-observability-cluster-'));
  const layout = { ...clusterLayout({ CLINICALSUITE_HOME: home }), binDir: clusterLayout().binDir };
  const removeCluster = async () => {
    await down({ layout }).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  };
  let info;
  try {
    info = await up({ build: false, layout });
  } catch (error) {
    await removeCluster();
    return { reason: `the test control plane did not start: ${(error as Error).message}` };
  }
  try {
    const kubectlPath = binaries(layout, readVersions()).kubectl;
    const kubectl = (args: string[], input?: string) => {
      const r = spawnSync(kubectlPath, args, {
        env: { ...process.env, KUBECONFIG: info.kubeconfig },
        input,
        encoding: 'utf8',
        timeout: 60_000,
      });
      if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    kubectl(['apply', '--server-side', '-f', join(REPO, 'crds', 'clinicalsuite.ai_clinicalsuites.yaml')]);
    for (let i = 0; i < 100; i++) {
      const established = spawnSync(
        kubectlPath,
        [
          'get',
          'crd/clinicalsuites.clinicalsuite.ai',
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Established")].status}',
        ],
        { env: { ...process.env, KUBECONFIG: info.kubeconfig }, encoding: 'utf8' },
      );
      if (established.stdout.trim() === 'True') break;
      await sleep(200);
    }
    const namespace = `observability-${Date.now().toString(36)}`;
    kubectl(['create', 'namespace', namespace]);
    const port = await freePort();
    let log = '';
    const child: ChildProcess = spawn(process.execPath, [OPERATOR], {
      env: {
        PATH: process.env['PATH'],
        KUBECONFIG: info.kubeconfig,
        PORT: String(port),
        HOST: '127.0.0.1',
        POD_NAMESPACE: 'default',
        LEADER_ELECT: 'false',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (c: Buffer) => (log += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (log += c.toString()));
    const sample = readFileSync(join(REPO, 'crds', 'samples', 'minimal-cpu.yaml'), 'utf8').replaceAll(
      'storageClass: standard',
      'storageClass: kwok-volume',
    );
    kubectl(['apply', '-n', namespace, '-f', '-'], sample);
    const stop = async () => {
      child.kill('SIGTERM');
      await removeCluster();
    };
    process.once('exit', () => child.kill('SIGKILL'));
    return { url: `http://127.0.0.1:${port}`, namespace, log: () => log, stop };
  } catch (error) {
    await removeCluster();
    throw error;
  }
}
