import { ServiceUnavailableError, type ConcurrencyGate, type Readiness } from '@clinicalsuite/kit';
import type { Catalog, Snapshot, VectorState } from '../adapters/catalog.js';
import { damagedSetMessage } from '../adapters/code-store.js';
import type { CodesearchConfig } from '../config.js';
import type { AbbreviationTable } from '../domain/abbreviations.js';
import type { CodesearchMetrics } from '../metrics.js';
import type { CodeType } from '../schemas/code-record.js';

/** What the routes share. */
export interface CodesearchRuntime {
  readonly config: CodesearchConfig;
  readonly catalog: Catalog;
  readonly abbreviations: AbbreviationTable;
  readonly readiness: Readiness;
  readonly gate: ConcurrencyGate;
  readonly metrics: CodesearchMetrics;
  readonly startedAt: number;
  readonly version: string;
}

export function requireSnapshot(rt: CodesearchRuntime): Snapshot {
  const snap = rt.catalog.snapshot;
  if (snap === undefined)
    throw new ServiceUnavailableError(`Code sets not loaded: ${rt.readiness.reason ?? 'starting'}`);
  return snap;
}

/** Why a type has no codes served, and what to do: its stored file is damaged, or there is none. */
export function unavailableHint(snap: Snapshot, type: CodeType): string {
  const damaged = snap.damaged.get(type);
  return damaged === undefined ? missingHint(type) : damagedSetMessage(damaged);
}

/** How a user gets codes of a type that has none. */
function missingHint(type: CodeType): string {
  const cli = `node services/codesearch/dist/cli.js import --type ${type} --file <file.csv|file.jsonl>`;
  if (type === 'ICD10')
    return `No ICD10 codes are loaded: run \`npm run models -- fetch codesearch-icd10cm\` (ICD-10-CM) and restart, or import your own set: ${cli}`;
  if (type === 'PROCEDURE')
    return `No PROCEDURE codes are loaded: run \`npm run models -- fetch codesearch-icd10pcs\` (ICD-10-PCS) and restart, or import your own set: ${cli}`;
  return `No ${type} codes are loaded: ${type} is licensed and not shipped; import your licensed file: ${cli}`;
}

export function vectorStatus(v: VectorState | undefined) {
  if (v === undefined)
    return { state: 'off' as const, done: null, total: null, reason: 'no codes', source: null };
  switch (v.state) {
    case 'ready':
      return { state: v.state, done: v.total, total: v.total, reason: null, source: v.source };
    case 'building':
      return { state: v.state, done: v.done, total: v.total, reason: null, source: null };
    default:
      return { state: v.state, done: null, total: null, reason: v.reason, source: null };
  }
}

export function describeVectorState(type: CodeType, v: VectorState | undefined): string {
  if (v === undefined) return `${type}: no codes`;
  switch (v.state) {
    case 'ready':
      return `${type}: ready`;
    case 'building':
      return `${type}: title vectors being built (${v.done}/${v.total})`;
    case 'waiting':
      return `${type}: title vectors queued`;
    default:
      return `${type}: ${v.reason}`;
  }
}
