// Jest globalSetup: remembers whether a test control plane was already up, so globalTeardown stops
// only one this run started (several test files share it; none stops it on its own).
export default async function globalSetup() {
  globalThis.__clusterWasUp = await clusterState();
}

export async function clusterState() {
  try {
    const { readState } = await import('../../tools/cluster/dist/cluster.js');
    return (await readState()) !== undefined;
  } catch {
    return false; // not built: no cluster test can run either
  }
}
