/**
 * Real English recordings for the speech tests, never synthetic ones: the LibriVox excerpts
 * (Jane Austen, "Sense and Sensibility", public-domain recordings) that pocketsphinx's own test
 * suite ships, with their transcripts, from PyPI's `pocketsphinx` 5.0.4 source archive (BSD-style
 * licence, CMU), fetched once per machine, checked by sha256 and kept under
 * $CLINICALSUITE_HOME/fixtures/stt (default ~/.cache/clinicalsuite), outside the clone.
 * Synthetic speech comes from Debian's espeak-ng, made at test time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { extract } from 'tar';
import { fetchModel } from '../../services/kit/src/models/index.js';

const SDIST = {
  url: 'https://files.pythonhosted.org/packages/ce/89/23e37c19bf30f0570088b7c4b548a666ca94331a6aa5a59b34402becc2d5/pocketsphinx-5.0.4.tar.gz',
  sha256: '17d2971e998490def9554b6ba41886708422af5b4ae888723b1b077aab0fe8d4',
  dir: 'pocketsphinx-5.0.4/test/data/librivox',
  licence: 'pocketsphinx-5.0.4/LICENSE',
};

export const LIBRIVOX_IDS = ['0870', '0880', '0890', '0920', '0930'] as const;
export type LibrivoxId = (typeof LIBRIVOX_IDS)[number];

export interface Recording {
  readonly id: string;
  readonly wav: string;
  /** What is said (the archive's transcript, lower case, no punctuation). */
  readonly transcript: string;
}

export function sttFixturesDir(): string {
  return join(
    process.env['CLINICALSUITE_HOME'] ?? join(homedir(), '.cache', 'clinicalsuite'),
    'fixtures',
    'stt',
  );
}

/** Fetches the recordings when missing; returns them with their transcripts. */
export async function ensureLibrivox(): Promise<Record<LibrivoxId, Recording>> {
  const dir = join(sttFixturesDir(), 'librivox');
  const name = (id: string) => `sense_and_sensibility_01_austen_64kb-${id}`;
  if (LIBRIVOX_IDS.some((id) => !existsSync(join(dir, `${name(id)}.wav`)))) {
    const archive = join(sttFixturesDir(), 'downloads', 'pocketsphinx-5.0.4.tar.gz');
    await fetchModel(SDIST.url, archive, { sha256: SDIST.sha256 });
    const staging = join(tmpdir(), `stt-fixtures-${String(process.pid)}`);
    mkdirSync(staging, { recursive: true });
    await extract({ file: archive, cwd: staging }, [SDIST.dir, SDIST.licence]);
    renameSync(join(staging, SDIST.licence), join(staging, SDIST.dir, 'LICENSE-pocketsphinx'));
    if (!existsSync(dir)) {
      mkdirSync(join(dir, '..'), { recursive: true });
      try {
        renameSync(join(staging, SDIST.dir), dir);
      } catch (error) {
        if (!existsSync(dir)) throw error; // a concurrent fetch won
      }
    }
    rmSync(staging, { recursive: true, force: true });
  }
  return Object.fromEntries(
    LIBRIVOX_IDS.map((id) => [
      id,
      {
        id,
        wav: join(dir, `${name(id)}.wav`),
        transcript: readFileSync(join(dir, `${name(id)}.txt`), 'utf8').trim(),
      },
    ]),
  ) as Record<LibrivoxId, Recording>;
}

/** espeak-ng speaking `text` (US English voice) into a WAV file under `dir`. */
export function espeak(text: string, dir: string, file: string, voice = 'en-us'): string {
  const path = join(dir, file);
  execFileSync('espeak-ng', ['-v', voice, '-w', path, text]);
  return path;
}

/** ffmpeg with the given arguments (`-y -v error` added). */
export function ffmpeg(...args: string[]): void {
  execFileSync('ffmpeg', ['-nostdin', '-y', '-v', 'error', ...args]);
}

/** Word error rate: word-level edit distance over the reference's length, after normalising. */
export function wordErrorRate(reference: string, hypothesis: string): number {
  const ref = words(reference);
  const hyp = words(hypothesis);
  if (ref.length === 0) return hyp.length === 0 ? 0 : 1;
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const row = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, sub));
    }
    prev = row;
  }
  return (prev[hyp.length] ?? 0) / ref.length;
}

/** Lower case, `mister` for `mr`, no punctuation. */
export function words(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/\bmr\b\.?/g, 'mister')
    .replace(/[^a-z0-9' ]+/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}
