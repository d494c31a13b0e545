import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { cpuFlags, whisperBinding } from '../../services/stt/src/adapters/whisper-process.js';

// Which whisper.cpp addon a child loads: the one services/stt/scripts/build-whisper-node.sh built
// for this CPU (npm run setup), or the package's prebuilt binary where the CPU lacks a feature the
// build needs. The build itself is a real component: absent, the first test says how to make it.

const release = join(
  dirname(createRequire(import.meta.url).resolve('@fugood/whisper.node/package.json')),
  'build',
  'Release',
);

describe('whisper.cpp addon choice', () => {
  it('is the addon built for this CPU when the CPU has every feature it was built for', () => {
    if (!existsSync(join(release, 'build.json')))
      throw new Error(
        `no whisper.cpp addon built at ${release}: run bash services/stt/scripts/build-whisper-node.sh`,
      );
    const built = JSON.parse(readFileSync(join(release, 'build.json'), 'utf8')) as {
      variant: string;
      cpuFlags: string[];
    };
    expect(built.cpuFlags.every((f) => cpuFlags().has(f))).toBe(true);
    expect(whisperBinding('cpu')).toEqual({
      path: join(release, 'index.node'),
      build: `CPU ${built.variant} build`,
      note: '',
      local: true,
    });
  });

  it('is the prebuilt binary, saying which features are missing, on a CPU without them', () => {
    const binding = whisperBinding('cpu', { flags: new Set(['sse4_2']) });
    expect(binding).toMatchObject({ build: 'CPU, prebuilt without SIMD', local: false });
    expect(binding?.path).toMatch(/@fugood\/node-whisper-linux-x64\/index\.node$/);
    expect(binding?.note).toMatch(
      /needs CPU features this machine lacks \(.*avx2.*\): running the slower prebuilt binary/,
    );
  });

  it('is the prebuilt binary when the local build is passed over', () => {
    expect(whisperBinding('cpu', { local: false })).toMatchObject({ local: false, note: '' });
  });
});
