// Types of lib.js (plain ESM JavaScript run by the harness without a build) for the TypeScript tests.
import type { z } from 'zod';

export const CASE_FORMAT: 'clinicalsuite.reasoning-cases/v1';
export const LANGUAGES: readonly ['en', 'vi'];

export interface EvalCase {
  readonly id: string;
  readonly language: 'en' | 'vi';
  readonly text: string;
  readonly expected: {
    readonly condition_id: string;
    readonly icd10: string;
    readonly also_accepted?: readonly string[];
  };
  readonly source: { readonly citation: string; readonly url: string; readonly locator: string };
  readonly notes?: string;
}

export interface Anchor {
  readonly who: string;
  readonly top1: number;
  readonly top3: number;
  readonly citation: string;
}

export interface CaseFile {
  readonly format: string;
  readonly description?: string;
  readonly anchors?: readonly Anchor[];
  readonly cases: EvalCase[];
}

export type CaseStatus = 'ranked' | 'not_scorable' | 'outside_top_k' | 'error';

export interface CaseOutcome {
  readonly id: string;
  readonly language: 'en' | 'vi';
  readonly expected: string;
  readonly status: CaseStatus;
  readonly rank: number | null;
  readonly diagnoses: readonly { readonly condition_id: string; readonly probability: number }[];
  readonly unknown: number;
  readonly findings: number;
  readonly warnings: readonly string[];
  readonly timings: unknown;
  readonly model: unknown;
  readonly error?: string;
}

export interface Figures {
  readonly cases: number;
  readonly top1: number;
  readonly top3: number;
  readonly top10: number;
  readonly brier: number;
  readonly ece: number;
  readonly meanUnknown: number;
}

export interface ReliabilityRow {
  readonly lower: number;
  readonly upper: number;
  readonly count: number;
  readonly confidence: number;
  readonly accuracy: number;
}

export interface Summary {
  readonly total: number;
  readonly overall: Figures;
  readonly byLanguage: Readonly<Record<string, Figures>>;
  readonly reliability: readonly ReliabilityRow[];
  readonly notScorable: readonly { readonly id: string; readonly expected: string }[];
  readonly outsideTopK: readonly string[];
  readonly failed: readonly { readonly id: string; readonly error: string }[];
  readonly models: readonly unknown[];
}

export const caseSchema: z.ZodType<EvalCase>;
export const caseFileSchema: z.ZodType;

export class CaseFileError extends Error {
  readonly problems: readonly string[];
  constructor(message: string, problems: string[]);
}

export function parseCaseFile(json: unknown, file: string): CaseFile;
export function loadCaseFile(path: string): Promise<CaseFile>;
export function conditionIdsFromCsv(csvText: string): Set<string>;
export function scoreResponse(evalCase: EvalCase, response: unknown, topK: number): CaseOutcome;
export function failedOutcome(evalCase: EvalCase, error: string): CaseOutcome;
export function acceptedIds(evalCase: EvalCase): Set<string>;
export interface BenchmarkCount {
  readonly n: number;
  readonly top1: number;
  readonly top3: number;
}
export function benchmarkFigures(
  cases: readonly EvalCase[],
  outcomes: readonly CaseOutcome[],
  covered: ReadonlySet<string>,
): Record<string, { readonly all: BenchmarkCount; readonly covered: BenchmarkCount }>;
export function formatBenchmark(
  figures: Record<string, { readonly all: BenchmarkCount; readonly covered: BenchmarkCount }>,
  anchors: readonly Anchor[],
): string;
export function brierScore(outcomes: readonly CaseOutcome[]): number;
export function reliability(outcomes: readonly CaseOutcome[], bins?: number): ReliabilityRow[];
export function expectedCalibrationError(outcomes: readonly CaseOutcome[], bins?: number): number;
export function topKAccuracy(outcomes: readonly CaseOutcome[], k: number): number;
export function summarize(outcomes: readonly CaseOutcome[], options?: { bins?: number }): Summary;
export function formatCaseTable(outcomes: readonly CaseOutcome[]): string;
export function formatSummary(summary: Summary): string;
