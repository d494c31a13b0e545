/** What every speech recognition backend produces, whatever engine is behind it. */

export const LANGUAGES = ['vi', 'en'] as const;
export type Language = (typeof LANGUAGES)[number];

export const LANGUAGE_NAMES: Readonly<Record<Language, string>> = { vi: 'Vietnamese', en: 'English' };

export const BACKEND_IDS = ['pocketsphinx', 'whisper'] as const;
export type BackendId = (typeof BACKEND_IDS)[number];

export interface Segment {
  /** Seconds from the start of the audio. */
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** 0..1 when the engine reports one, else null. */
  readonly confidence: number | null;
}

export interface Recognition {
  readonly segments: readonly Segment[];
  /** The language the engine decoded in, as it reports it (Whisper's language token); else absent. */
  readonly engineLanguage?: string | null;
}

/** A backend's state, as routing and /health see it. */
export interface BackendStatus {
  readonly id: BackendId;
  readonly state: 'disabled' | 'starting' | 'ready' | 'failed';
  /** Languages it transcribes once ready. */
  readonly languages: readonly Language[];
  /** Why it is not ready, in words a user can act on. */
  readonly reason: string | null;
  readonly engine: string;
  readonly model: string | null;
}
