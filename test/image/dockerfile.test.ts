import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';

// operator/Dockerfile checked without Docker (no engine and no hadolint here; test/image/build.sh
// builds it with buildah where installed): parsed into stages, every reference resolved, and the
// llama-server stage's build command run in --path mode with the stage's own settings.

const root = new URL('../../', import.meta.url).pathname;
const text = readFileSync(`${root}operator/Dockerfile`, 'utf8');

interface Instruction {
  readonly op: string;
  readonly args: string;
}
interface Stage {
  readonly base: string;
  readonly name: string | null;
  readonly steps: Instruction[];
}

/** Instructions with continuation lines joined and comments dropped; global ARGs; stages. */
function parse(source: string): { globals: Map<string, string | null>; stages: Stage[] } {
  const lines = source
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const globals = new Map<string, string | null>();
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const upper = op.toUpperCase();
    if (upper === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!m) throw new Error(`bad FROM: ${line}`);
      stages.push({ base: m[1]!, name: m[2] ?? null, steps: [] });
    } else if (stages.length === 0) {
      expect(upper).toBe('ARG');
      const [name = '', value] = args.split(/=(.*)/s);
      globals.set(name, value ?? null);
    } else {
      stages.at(-1)!.steps.push({ op: upper, args });
    }
  }
  return { globals, stages };
}

const { globals, stages } = parse(text);
const stage = (name: string): Stage => {
  const found = stages.find((s) => s.name === name);
  if (!found) throw new Error(`no stage ${name}`);
  return found;
};

describe('operator/Dockerfile', () => {
  it('uses only known instructions, global ARGs as bases and stages defined before they are used', () => {
    const known = ['ARG', 'ENV', 'RUN', 'COPY', 'WORKDIR', 'USER', 'EXPOSE', 'ENTRYPOINT', 'CMD'];
    const seen: string[] = [];
    for (const s of stages) {
      const base = /^\$\{(\w+)\}$/.exec(s.base);
      if (base) expect(globals.has(base[1]!)).toBe(true);
      else expect(seen).toContain(s.base);
      for (const step of s.steps) {
        expect(known).toContain(step.op);
        const from = /--from=(\S+)/.exec(step.args)?.[1];
        if (from !== undefined) expect(seen).toContain(from);
      }
      if (s.name !== null) seen.push(s.name);
    }
    expect(stages.at(-1)?.name).toBe('runtime');
  });

  it('declares in each stage the build args its RUN steps read (an ARG does not pass through FROM)', () => {
    // A global ARG (before the first FROM) is visible only in FROM lines, and a stage's ARG only in
    // that stage, not in a stage built FROM it: `FROM deps AS build` without its own `ARG RUNTIME`
    // reads RUNTIME as empty (that once kept 850 MB of CUDA/Vulkan engines in the CPU image).
    const problems: string[] = [];
    for (const s of stages) {
      const declared = new Set<string>();
      for (const step of s.steps) {
        if (step.op === 'ARG' || step.op === 'ENV')
          for (const m of step.args.matchAll(/(?:^|\s)([A-Za-z_]\w*)(?==|\s|$)/g)) declared.add(m[1]!);
        if (step.op !== 'RUN') continue;
        for (const name of globals.keys()) {
          const read = new RegExp(`\\$\\{?${name}\\b`).test(step.args);
          if (read && !declared.has(name))
            problems.push(`${s.name ?? s.base}: RUN reads $${name} undeclared`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('copies from the build context only paths that exist and that .dockerignore keeps', () => {
    const ignored = readFileSync(`${root}.dockerignore`, 'utf8').split('\n');
    for (const s of stages) {
      for (const step of s.steps.filter((x) => x.op === 'COPY' && !x.args.includes('--from='))) {
        const sources = step.args.split(/\s+/).slice(0, -1);
        for (const src of sources) {
          expect(existsSync(`${root}${src}`)).toBe(true);
          expect(ignored).not.toContain(src.replace(/\/$/, ''));
        }
      }
    }
  });

  it('builds llama-server with the medllm script in its own stage, from the deps stage only', () => {
    const llama = stage('llama-server');
    expect(llama.base).toBe('${LLAMA_BUILD_IMAGE}');
    const copies = llama.steps.filter((s) => s.op === 'COPY').map((s) => s.args);
    // Not from `build` (every source edit would rebuild it): the bundled llama.cpp from deps.
    expect(copies.filter((c) => c.includes('--from=')).every((c) => /--from=(deps|node)\s/.test(c))).toBe(
      true,
    );
    expect(copies).toContain(
      '--from=deps /src/node_modules/node-llama-cpp/llama/gitRelease.bundle node_modules/node-llama-cpp/llama/',
    );
    const run = llama.steps.filter((s) => s.op === 'RUN').map((s) => s.args);
    expect(run.some((r) => r.includes('bash services/medllm/scripts/build-llama-server.sh'))).toBe(true);
    expect(run.some((r) => /LLAMA_SERVER_GPU="\$RUNTIME"/.test(r))).toBe(true);
  });

  it("builds whisper.cpp's addon in its own stage for llama-server's CPU variant; the build stage takes it", () => {
    const whisper = stage('whisper-node');
    expect(whisper.base).toBe('deps');
    // Only the build's own files: a source edit elsewhere does not rebuild it.
    const copies = whisper.steps.filter((s) => s.op === 'COPY').map((s) => s.args.split(/\s+/)[0]);
    expect(copies.sort()).toEqual([
      'services/stt/native/',
      'services/stt/scripts/build-whisper-node.sh',
      'tools/ggml/cpu-variant.sh',
    ]);
    const run = whisper.steps.filter((s) => s.op === 'RUN').map((s) => s.args);
    expect(run.some((r) => r.includes('GGML_CPU_VARIANT="$LLAMA_CPU_VARIANT"'))).toBe(true);
    expect(run.some((r) => r.includes('bash services/stt/scripts/build-whisper-node.sh'))).toBe(true);
    const llamaDefault = stage('llama-server').steps.find((s) => s.args.startsWith('LLAMA_CPU_VARIANT='));
    expect(whisper.steps.find((s) => s.args.startsWith('LLAMA_CPU_VARIANT='))?.args).toBe(llamaDefault?.args);
    expect(stage('build').steps.map((s) => s.args)).toContain(
      '--from=whisper-node /src/node_modules/@fugood/whisper.node/build/ node_modules/@fugood/whisper.node/build/',
    );
  });

  it('installs in its runtime stage what operator/debian-packages.txt says the services and models need', () => {
    // Lines of `<package> <who needs it…>`; the image runs services and fetches models, it neither
    // compiles (npm) nor tests.
    const needed = readFileSync(`${root}operator/debian-packages.txt`, 'utf8')
      .split('\n')
      .map((l) => l.replace(/#.*/, '').trim().split(/\s+/))
      .filter(([pkg, ...users]) => pkg !== '' && users.some((u) => u !== 'npm' && u !== 'test'))
      .map(([pkg]) => pkg!);
    const install = stage('runtime')
      .steps.filter((s) => s.op === 'RUN')
      .map((s) => /apt-get install -y --no-install-recommends (.*?)(?:&&|$)/.exec(s.args)?.[1])
      .find((list) => list !== undefined);
    const installed = (install ?? '').trim().split(/\s+/);
    expect(needed.length).toBeGreaterThan(5);
    expect(installed.filter((p) => !['ca-certificates', 'tini'].includes(p)).sort()).toEqual(needed.sort());
  });

  it('puts llama-server where LLAMA_SERVER_PATH says, checks its libraries, setpriv and prlimit', () => {
    const runtime = stage('runtime');
    const env = runtime.steps
      .filter((s) => s.op === 'ENV')
      .map((s) => s.args)
      .join(' ');
    const path = /LLAMA_SERVER_PATH=(\S+)/.exec(env)?.[1];
    expect(path).toBe('/usr/local/bin/llama-server');
    expect(
      runtime.steps.some(
        (s) => s.op === 'COPY' && s.args === `--from=llama-server /opt/llama-server/bin/llama-server ${path}`,
      ),
    ).toBe(true);
    const run = runtime.steps
      .filter((s) => s.op === 'RUN')
      .map((s) => s.args)
      .join('\n');
    expect(run).toContain('setpriv --pdeathsig KILL -- true');
    expect(run).toContain('prlimit --data=1073741824 --cpu=60 -- true');
    expect(run).toContain(`ldd ${path}`);
  });

  it("runs the stage's build command in --path mode: portable CPU variant, CUDA for every listed GPU", () => {
    const llama = stage('llama-server');
    const arg = (name: string) =>
      llama.steps.find((s) => s.op === 'ARG' && s.args.startsWith(`${name}=`))?.args.split(/=(.*)/s)[1];
    const variant = arg('LLAMA_CPU_VARIANT')!;
    const archs = arg('CUDA_ARCHITECTURES')!;
    expect(variant).toBe('haswell');
    const script = `${root}services/medllm/scripts/build-llama-server.sh`;
    const pathFor = (gpu: string) =>
      execFileSync('bash', [script, '--path'], {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          LLAMA_SERVER_GPU: gpu,
          GGML_CPU_VARIANT: variant,
          CMAKE_CUDA_ARCHITECTURES: archs,
          LLAMA_SERVER_CACHE: '/tmp/llama-server',
        },
      }).trim();
    expect(pathFor('cpu')).toMatch(/^\/tmp\/llama-server\/[^/]+\/bin-haswell\/llama-server$/);
    expect(pathFor('cuda')).toMatch(
      new RegExp(`/bin-cuda-${archs.replace(/;/g, '-')}-haswell/llama-server$`),
    );
    // A stray character in the list is refused rather than passed to cmake.
    expect(() =>
      execFileSync('bash', [script, '--path'], {
        stdio: 'pipe',
        env: { PATH: process.env.PATH, LLAMA_SERVER_GPU: 'cuda', CMAKE_CUDA_ARCHITECTURES: '90 $(id)' },
      }),
    ).toThrow(/CMAKE_CUDA_ARCHITECTURES must be architectures/);
  });
});
