/**
 * `npm run cluster -- up|down|status|env|build`: a real Kubernetes control plane on 127.0.0.1 for
 * the operator's integration tests (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
 * kwok with fake CPU and GPU nodes), built once from the Go module proxy by test/cluster/build.sh.
 * Exit codes: 0 ok, 1 failure (or `status`/`env` with no cluster up), 2 bad arguments.
 */
import { down, ensureBuilt, status, up, type ClusterStatus } from './cluster.js';
import { clusterLayout } from './layout.js';

const USAGE = `usage: npm run cluster -- <command>

  up       build what is missing (first time: ~30 min on 2 cores), start the cluster, or reuse the
           one already up; prints the admin kubeconfig's path
  up --node
           the same with a real node (containerd, kubelet, kube-proxy, CoreDNS, local-path storage,
           network policies) beside kwok's GPU nodes; needs root and Debian's containerd, runc,
           containernetworking-plugins, iptables, conntrack, ipset and buildah
           (test/cluster/README.md)
  down     stop every process of the cluster (SIGTERM, then SIGKILL) and remove its state
  status   what runs, on which ports, and whether the API server and nodes are ready
  env      print 'export KUBECONFIG=...'; use: eval "$(npm run -s cluster -- env)"
  build    only build the pinned binaries (test/cluster/build.sh); 'build --node' also the node's

Environment: CLINICALSUITE_HOME (default ~/.cache/clinicalsuite); state in $CLINICALSUITE_HOME/cluster.
`;

const out = (text: string): void => void process.stdout.write(text);
const err = (text: string): void => void process.stderr.write(text);
const log = (line: string): void => err(`cluster: ${line}\n`);
const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

function formatStatus(s: ClusterStatus): string {
  const lines = [
    `cluster: ${s.up ? 'up' : s.server ? 'NOT healthy' : 'down'}${s.startedAt ? ` (started ${s.startedAt})` : ''}`,
    `versions: kubernetes ${s.versions.kubernetes}, etcd ${s.versions.etcd}, kwok ${s.versions.kwok}`,
  ];
  if (s.server)
    lines.push(`server: ${s.server} (readyz: ${s.ready ? 'ok' : 'failing'})`, `kubeconfig: ${s.kubeconfig}`);
  for (const c of s.components) {
    const state = c.running ? `running  pid ${c.pid ?? '?'}` : c.pid ? `DEAD     pid ${c.pid}` : 'stopped';
    lines.push(`  ${c.component.padEnd(24)} ${state.padEnd(20)} ${c.log}`);
  }
  if (s.nodes.length > 0) {
    lines.push(`nodes: ${s.nodes.map((n) => `${n.name}${n.ready ? '' : ' (NotReady)'}`).join(', ')}`);
  }
  if (s.missingBinaries.length > 0) lines.push(`not built yet: ${s.missingBinaries.length} binaries`);
  return lines.join('\n') + '\n';
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const node = rest.length === 1 && rest[0] === '--node' && (command === 'up' || command === 'build');
  if ((rest.length > 0 && !node) || command === undefined) {
    err(USAGE);
    return 2;
  }
  switch (command) {
    case 'up': {
      const info = await up({ log, node });
      out(`${info.kubeconfig}\n`);
      return 0;
    }
    case 'down': {
      const stopped = await down({ log });
      if (stopped.length === 0) log('nothing was running');
      return 0;
    }
    case 'status': {
      const s = await status();
      out(formatStatus(s));
      return s.up ? 0 : 1;
    }
    case 'env': {
      const s = await status();
      if (!s.up) log('the cluster is not up (npm run cluster -- up)');
      out(`export KUBECONFIG=${shellQuote(clusterLayout().kubeconfig)}\n`);
      return s.up ? 0 : 1;
    }
    case 'build':
      await ensureBuilt(log, undefined, node);
      return 0;
    case 'help':
    case '--help':
    case '-h':
      out(USAGE);
      return 0;
    default:
      err(`unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    log(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  },
);
