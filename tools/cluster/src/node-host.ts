/**
 * What the test cluster's real node takes from the machine, and gives back: its network namespace,
 * the veth pair to the host and the host's routes (node-config.ts has the addresses), and the pods'
 * cgroups. node.ts starts and stops the node's processes around these; test/cluster/README.md has
 * the picture.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { SERVICE_CIDR } from './components.js';
import {
  NODE_HOST_IP,
  NODE_HOST_LINK,
  NODE_IP,
  NODE_LINK,
  NODE_LINK_CIDR,
  NODE_NETNS,
  NODE_POD_CIDR,
} from './node-config.js';
import type { Log } from './state.js';

const run = promisify(execFile);

export async function sh(cmd: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run(cmd, [...args], { maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as Error & { stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${(e.stderr || e.message).trim()}`);
  }
}

function netnsExists(): boolean {
  return existsSync(`/run/netns/${NODE_NETNS}`);
}

/** Whether the machine-wide names the node takes (its netns, its host link) are free. */
export function nodeNamesInUse(): string[] {
  const used: string[] = [];
  if (netnsExists()) used.push(`network namespace ${NODE_NETNS}`);
  if (existsSync(`/sys/class/net/${NODE_HOST_LINK}`)) used.push(`link ${NODE_HOST_LINK}`);
  return used;
}

/** The node's network namespace, its link to the host, and the host's routes to pods and services. */
export async function makeNetwork(): Promise<void> {
  await sh('ip', ['netns', 'add', NODE_NETNS]);
  await sh('ip', [
    'link',
    'add',
    NODE_HOST_LINK,
    'type',
    'veth',
    'peer',
    'name',
    NODE_LINK,
    'netns',
    NODE_NETNS,
  ]);
  const prefix = NODE_LINK_CIDR.split('/')[1] ?? '30';
  await sh('ip', ['addr', 'add', `${NODE_HOST_IP}/${prefix}`, 'dev', NODE_HOST_LINK]);
  await sh('ip', ['link', 'set', NODE_HOST_LINK, 'up']);
  const inNode = ['-n', NODE_NETNS];
  await sh('ip', [...inNode, 'link', 'set', 'lo', 'up']);
  await sh('ip', [...inNode, 'addr', 'add', `${NODE_IP}/${prefix}`, 'dev', NODE_LINK]);
  await sh('ip', [...inNode, 'link', 'set', NODE_LINK, 'up']);
  await sh('ip', [...inNode, 'route', 'add', 'default', 'via', NODE_HOST_IP]);
  // The host reaches pods (Prometheus, tests) and ClusterIPs (through kube-proxy) via the node.
  await sh('ip', ['route', 'add', NODE_POD_CIDR, 'via', NODE_IP]);
  await sh('ip', ['route', 'add', SERVICE_CIDR, 'via', NODE_IP]);
  // The node forwards between its pods and the host, and bridged pod traffic passes through
  // iptables (Services, network policies): namespaced settings, the host's own stay as they are.
  for (const setting of ['net.ipv4.ip_forward=1', 'net.bridge.bridge-nf-call-iptables=1']) {
    await sh('ip', ['netns', 'exec', NODE_NETNS, 'sysctl', '-q', '-w', setting]);
  }
}

export async function removeNetwork(log: Log): Promise<void> {
  for (const route of [NODE_POD_CIDR, SERVICE_CIDR]) {
    await run('ip', ['route', 'del', route, 'via', NODE_IP]).catch(() => undefined);
  }
  if (netnsExists()) {
    await sh('ip', ['netns', 'del', NODE_NETNS]);
    log(`deleted network namespace ${NODE_NETNS}`);
  }
  // The veth pair goes with the namespace; wait for the kernel to release the host's end.
  for (let i = 0; i < 50 && existsSync(`/sys/class/net/${NODE_HOST_LINK}`); i++) await sleep(100);
  if (existsSync(`/sys/class/net/${NODE_HOST_LINK}`)) {
    await run('ip', ['link', 'del', NODE_HOST_LINK]).catch(() => undefined);
  }
}

const CGROUP_ROOT = '/sys/fs/cgroup';

/** Every `kubepods` cgroup directory, deepest first, under each cgroup v1 controller. */
export async function podCgroups(): Promise<string[]> {
  const dirs: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name));
    dirs.push(dir);
  };
  for (const controller of await readdir(CGROUP_ROOT).catch(() => [] as string[])) {
    const top = join(CGROUP_ROOT, controller, 'kubepods');
    if (existsSync(top)) await walk(top);
  }
  return dirs;
}

async function cgroupProcs(dir: string): Promise<number[]> {
  const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}

/** SIGKILLs whatever still runs in the pods' cgroups, then removes the cgroups. */
export async function removePodCgroups(log: Log): Promise<void> {
  for (let round = 0; round < 50; round++) {
    const pids = new Set<number>();
    for (const dir of await podCgroups()) for (const pid of await cgroupProcs(dir)) pids.add(pid);
    if (pids.size === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await sleep(100);
  }
  let removed = 0;
  for (const dir of await podCgroups()) {
    for (let i = 0; i < 20; i++) {
      try {
        await rmdir(dir);
        removed++;
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
        await sleep(100);
      }
    }
  }
  const left = await podCgroups();
  if (left.length > 0) throw new Error(`could not remove the pods' cgroups: ${left.slice(0, 5).join(', ')}`);
  if (removed > 0) log(`removed ${removed} pod cgroups`);
}
