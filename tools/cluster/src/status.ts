/** `npm run cluster -- status`: which processes of the test control plane run, and its nodes. */
import { join } from 'node:path';
import { get } from './api.js';
import {
  clusterLayout,
  COMPONENTS,
  missingBinaries,
  readVersions,
  type Component,
  type Versions,
} from './layout.js';
import { isOurProcess } from './processes.js';
import { adminCredentials, adminEndpoint, ownedBy, readState, readyz, type NodeList } from './state.js';

export interface ComponentStatus {
  component: Component;
  pid?: number;
  running: boolean;
  log: string;
}

export interface ClusterStatus {
  up: boolean;
  server?: string;
  kubeconfig: string;
  versions: Versions;
  startedAt?: string;
  ready: boolean;
  components: ComponentStatus[];
  nodes: { name: string; ready: boolean }[];
  missingBinaries: string[];
}

export async function status(layout = clusterLayout()): Promise<ClusterStatus> {
  const state = await readState(layout);
  const versions = readVersions();
  const components = COMPONENTS.map((component): ComponentStatus => {
    const rec = state?.processes[component];
    return {
      component,
      ...(rec ? { pid: rec.pid } : {}),
      running: rec !== undefined && isOurProcess(rec.pid, ownedBy(layout, component)),
      log: join(layout.logsDir, `${component}.log`),
    };
  });
  let ready = false;
  let nodes: ClusterStatus['nodes'] = [];
  if (state) {
    try {
      const creds = await adminCredentials(layout);
      const endpoint = adminEndpoint(state, creds.caPem, creds.token);
      ready = await readyz(endpoint);
      if (ready) {
        nodes = ((await get<NodeList>(endpoint, '/api/v1/nodes'))?.items ?? []).map((n) => ({
          name: n.metadata.name,
          ready: (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
        }));
      }
    } catch {
      ready = false;
    }
  }
  return {
    up: state !== undefined && components.every((c) => c.running) && ready,
    ...(state ? { server: state.server, startedAt: state.startedAt } : {}),
    kubeconfig: layout.kubeconfig,
    versions: state?.versions ?? versions,
    ready,
    components,
    nodes,
    missingBinaries: missingBinaries(layout, versions),
  };
}
