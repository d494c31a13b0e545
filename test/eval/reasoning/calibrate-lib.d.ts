// Types of calibrate-lib.js (plain ESM JavaScript run without a build) for the TypeScript tests.

export const DEFAULT_FOLDS: 5;

export interface CaseFinding {
  readonly feature: string;
  readonly present: boolean;
  readonly certainty: number;
}

/** What labelCase reads of a compiled model. */
export interface ModelLike {
  readonly conditionIndex: ReadonlyMap<string, number>;
}

export interface CalibrationCase {
  readonly id: string;
  readonly expected: string;
  readonly findings: readonly CaseFinding[];
  /** The expected condition when the model scores it, else null ("none of these"). */
  readonly truth: string | null;
}

export interface PreparedCase extends CalibrationCase {
  readonly llr: Float64Array;
}

export interface Figures {
  readonly cases: number;
  readonly logLoss: number;
  readonly brier: number;
  readonly ece: number;
  /** Top-1 with "none of these" ranked among the conditions, over every case. */
  readonly top1: number;
  /** Top-1 among the conditions, over the cases the base scores (NaN when none). */
  readonly top1Scorable: number;
  readonly meanUnknown: number;
}

/** The metrics' EvaluatedCase: the engine's result at one α, every condition ranked. */
export interface Evaluated {
  readonly truth: string | null;
  readonly result: {
    readonly ranked: {
      readonly condition: string;
      readonly probability: number;
      readonly contributions: [];
    }[];
    readonly unknown: number;
    readonly nextFindings: [];
  };
}

export interface FoldResult {
  readonly fold: number;
  readonly ids: readonly string[];
  /** Cases α was fitted on (the other folds). */
  readonly train: number;
  readonly alpha?: number;
  readonly atBound?: boolean;
  readonly before?: Figures;
  readonly after?: Figures;
  readonly skipped?: string;
}

/** Paired per-case difference before − after (positive: the fit helps), mean and its standard error. */
export interface PairedDifference {
  readonly mean: number;
  readonly se: number;
  readonly n: number;
}

export interface CrossValidation {
  readonly k: number;
  readonly folds: readonly FoldResult[];
  readonly pooled: { readonly before: Figures; readonly after: Figures };
  readonly improvement: { readonly logLoss: PairedDifference; readonly brier: PairedDifference };
}

// The engine is passed in (the dist build or the TypeScript source): loosely typed here.
/* eslint-disable @typescript-eslint/no-explicit-any */
export function foldOf(id: string, k?: number): number;
export function responseFindings(response: unknown): CaseFinding[];
export function labelCase(
  model: ModelLike,
  c: { readonly id: string; readonly expected: string; readonly findings: readonly CaseFinding[] },
): CalibrationCase;
export function prepareCases(engine: any, model: any, cases: readonly CalibrationCase[]): PreparedCase[];
export function predict(engine: any, model: any, cases: readonly PreparedCase[], alpha: number): Evaluated[];
export function figures(engine: any, evaluated: readonly Evaluated[]): Figures;
export function crossValidate(
  engine: any,
  model: any,
  cases: readonly CalibrationCase[],
  options?: { readonly k?: number; readonly fitOptions?: object },
): CrossValidation;
export function pairedDifference(
  metric: (cases: readonly any[]) => number,
  before: readonly any[],
  after: readonly any[],
): PairedDifference;
export function formatCrossValidation(cv: CrossValidation): string;
