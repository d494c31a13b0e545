/**
 * A finding as the rule pass builds it: a range in the folded text instead of the input's, and
 * no context yet (present, certainty and source are set when it becomes an ExtractedFinding).
 */
import type { ExtractedFinding } from './types.js';
import { impossibility, type LimitKey } from './units.js';

export type Draft = Omit<ExtractedFinding, 'text' | 'start' | 'end' | 'source' | 'present' | 'certainty'> & {
  /** Folded range. */
  readonly from: number;
  readonly to: number;
};

/** `draft` marked implausible when its normalised value is outside what a living patient can show. */
export function withLimit<T extends Draft>(draft: T, key: LimitKey, normalised: number, shown?: number): T {
  const why = impossibility(key, normalised);
  if (why === null) return draft;
  const note = shown === undefined ? why : `${shown} ${draft.unit ?? ''} (${why})`.replace('  ', ' ');
  return { ...draft, implausible: `${draft.name} ${note}` };
}
