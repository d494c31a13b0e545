// Jest globalTeardown: stops the test control plane if this run started it (CLUSTER_KEEP=1 keeps it).
import { clusterState } from './global-setup.js';

export default async function globalTeardown() {
  if (globalThis.__clusterWasUp || process.env.CLUSTER_KEEP === '1') return;
  if (!(await clusterState())) return;
  const { down } = await import('../../tools/cluster/dist/cluster.js');
  await down();
}
