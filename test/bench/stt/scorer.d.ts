// Types of scorer.js (plain ESM JavaScript run by the benchmark without a build) for the TypeScript tests.

export interface NormaliseOptions {
  readonly diacritics?: boolean;
}

export interface EditCounts {
  readonly distance: number;
  readonly substitutions: number;
  readonly deletions: number;
  readonly insertions: number;
}

export interface Count {
  readonly errors: number;
  readonly total: number;
}

export interface UtteranceScore {
  readonly words: Count & { substitutions: number; deletions: number; insertions: number };
  readonly chars: Count;
  readonly charsNoDiacritics: Count;
}

export interface CorpusScore {
  readonly utterances: number;
  readonly wer: number;
  readonly cer: number;
  readonly cerNoDiacritics: number;
  readonly wordErrors: number;
  readonly referenceWords: number;
  readonly charErrors: number;
  readonly referenceChars: number;
}

export function words(text: string, options?: NormaliseOptions): string[];
export function stripDiacritics(text: string): string;
export function characters(text: string, options?: NormaliseOptions): string[];
export function editDistance<T>(ref: readonly T[], hyp: readonly T[]): EditCounts;
export function scoreUtterance(reference: string, hypothesis: string): UtteranceScore;
export function aggregate(scores: readonly UtteranceScore[]): CorpusScore;
