// Types of corpus.js (plain ESM JavaScript run by the benchmark without a build) for the TypeScript tests.

export interface Utterance {
  readonly id: string;
  readonly language: 'en' | 'vi';
  readonly source: string;
  readonly path: string;
  readonly sha256: string;
  readonly seconds: number;
  readonly reference: string;
  /** The audio file, once fetched. */
  readonly audio: string;
}

export function fixturesDir(env?: NodeJS.ProcessEnv): string;
export function ensureCorpus(
  languages: readonly string[],
  options?: { env?: NodeJS.ProcessEnv; log?: (message: string) => void },
): Promise<Utterance[]>;
