/**
 * test/e2e/run.sh without Docker: its argument handling, its refusal (exit 3, each missing
 * prerequisite named with how to get it) when Docker, kind, kubectl or helm are missing or the
 * Docker daemon does not answer, and that a refused run leaves nothing behind. Also the kind config
 * it writes from kind-config.yaml. What needs a Docker daemon (the cluster, the image, the chart
 * install and the tests on kind) is the script's own business: see test/e2e/README.md.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';
import { e2eKindConfig } from './kind-config.js';

const REPO = new URL('../../', import.meta.url).pathname;
const SCRIPT = join(REPO, 'test', 'e2e', 'run.sh');
const BASH = '/bin/bash';

function run(args: string[], env: Record<string, string> = {}): { code: number; out: string; err: string } {
  const home = mkdtempSync(join(tmpdir(), 'e2e-script-'));
  const r = spawnSync(BASH, [SCRIPT, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: process.env['PATH'] ?? '', CLINICALSUITE_HOME: home, ...env },
  });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

/** A PATH directory holding only links to the named commands of this machine. */
function pathWith(...commands: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'e2e-path-'));
  for (const command of commands) {
    const which = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
    if (which) symlinkSync(which, join(dir, command));
  }
  return dir;
}

describe('test/e2e/run.sh', () => {
  it('prints its usage with --help and exits 0, before looking for any tool', () => {
    const r = run(['--help'], { PATH: pathWith() });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^Usage: test\/e2e\/run\.sh \[options\] \[-- jest arguments\]/);
    for (const option of ['--name', '--image', '--keep', '--reuse', '--skip-build', '--models-dir']) {
      expect(r.out).toContain(option);
    }
  });

  it('rejects bad arguments with exit 2 and says which', () => {
    const cases: [string[], string][] = [
      [['--frobnicate'], 'unknown option: --frobnicate'],
      [['--name'], '--name needs a value'],
      [['--name', 'Bad_Name'], "--name 'Bad_Name' must be lowercase letters"],
      [['--image', 'clinicalsuite'], "--image 'clinicalsuite' must be <registry>/<repository>:<tag>"],
      [['--timeout-scale', '0'], '--timeout-scale must be a whole number from 1 to 20'],
      [['--models-dir', '/no/such/dir'], '--models-dir /no/such/dir is not a directory'],
    ];
    for (const [args, message] of cases) {
      const r = run(args, { PATH: pathWith() });
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.err).toContain(`run.sh: ${message}`);
      expect(r.err).toContain("Try 'test/e2e/run.sh --help'.");
    }
  });

  it('refuses with exit 3 and names every missing tool when none is on PATH, creating nothing', () => {
    const home = mkdtempSync(join(tmpdir(), 'e2e-home-'));
    const r = run(['--keep'], { PATH: pathWith(), CLINICALSUITE_HOME: home });
    expect(r.code).toBe(3);
    expect(r.err).toContain('run.sh: cannot run the kind end-to-end tests, missing prerequisites:');
    for (const tool of ['docker', 'kind', 'kubectl', 'helm', 'node', 'npm']) {
      expect(r.err).toMatch(new RegExp(`^  - ${tool}: not found on PATH; install `, 'm'));
    }
    expect(r.err).toContain('go install sigs.k8s.io/kind@v0.31.0');
    expect(r.err).toContain('test/cluster/README.md');
    expect(existsSync(join(home, 'e2e'))).toBe(false);
  });

  it('refuses with exit 3 when the docker CLI is there but its daemon does not answer', () => {
    const path = pathWith('docker', 'kubectl', 'node', 'npm');
    if (!existsSync(join(path, 'docker'))) {
      // Without a docker CLI on this machine, the case above covers the refusal.
      process.stderr.write('note: no docker CLI here; the unreachable-daemon case is not exercised\n');
      return;
    }
    const r = run([], { PATH: path, DOCKER_HOST: 'unix:///nonexistent/docker.sock' });
    expect(r.code).toBe(3);
    expect(r.err).toMatch(
      /^ {2}- docker: the CLI is here but the Docker daemon does not answer \(docker info: .+\)/m,
    );
    expect(r.err).toMatch(/^ {2}- kind: not found on PATH/m);
    expect(r.err).toMatch(/^ {2}- helm: not found on PATH/m);
    expect(r.err).not.toMatch(/^ {2}- (kubectl|node|npm):/m);
  });

  it('writes the kind config from kind-config.yaml: name, models directory, no host port', () => {
    const text = readFileSync(join(REPO, 'kind-config.yaml'), 'utf8');
    type Node = { role: string; extraMounts?: { hostPath: string }[]; extraPortMappings?: unknown };
    const original = parse(text) as { nodes: Node[] };
    const config = parse(e2eKindConfig(text, 'e2e-1', '/srv/models')) as {
      name: string;
      nodes: Node[];
    };
    expect(config.name).toBe('e2e-1');
    // Two workers, so that the one given fake GPUs is not the only place a pod can go.
    expect(config.nodes.map((n) => n.role)).toEqual(['control-plane', 'worker', 'worker']);
    expect(config.nodes.map((n) => n.role)).toEqual(original.nodes.map((n) => n.role));
    expect(config.nodes.flatMap((n) => n.extraMounts ?? []).map((m) => m.hostPath)).toEqual([
      '/srv/models',
      '/srv/models',
    ]);
    expect(config.nodes.some((n) => n.extraPortMappings !== undefined)).toBe(false);
    expect(original.nodes.some((n) => n.extraPortMappings !== undefined)).toBe(true);
    expect(() => e2eKindConfig(text, 'e2e-1', 'models')).toThrow(/must be an absolute path: models/);
    expect(() => e2eKindConfig('kind: Pod\n', 'e2e-1', '/m')).toThrow(/not a kind Cluster config/);
  });
});
