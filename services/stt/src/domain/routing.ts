import { LANGUAGE_NAMES, type BackendId, type BackendStatus, type Language } from './types.js';

/**
 * Which backend transcribes a request: the one asked for, else the best ready one for the language
 * (a Whisper model when loaded, then pocketsphinx for English). Never a backend that does not know
 * the language: English output for Vietnamese audio would be made up.
 */

export type BackendChoice = 'auto' | BackendId;

export type Route =
  | { readonly ok: true; readonly backend: BackendId }
  | {
      readonly ok: false;
      /** `unsupported`: nothing configured here knows the language (422); `not_ready`: 503. */
      readonly kind: 'unsupported' | 'not_ready';
      readonly field: 'language' | 'backend';
      readonly message: string;
    };

const PREFERENCE: readonly BackendId[] = ['whisper', 'pocketsphinx'];

/** What a user supplies for a language nothing here transcribes. */
export const WHISPER_HINT =
  'mount a multilingual whisper.cpp model (ggml-base.bin, ggml-small.bin, ggml-large-v3-turbo.bin ...; ' +
  'not a *.en model) and set STT_WHISPER_MODEL (or the suite\u2019s stt model, MODEL_PATH) to its path';

export function routeRequest(
  language: Language,
  choice: BackendChoice,
  backends: readonly BackendStatus[],
): Route {
  const knows = (b: BackendStatus): boolean => b.state !== 'disabled' && b.languages.includes(language);
  const candidates =
    choice === 'auto'
      ? PREFERENCE.flatMap((id) => backends.filter((b) => b.id === id && knows(b)))
      : backends.filter((b) => b.id === choice);
  const name = LANGUAGE_NAMES[language];
  if (choice !== 'auto') {
    const b = candidates[0];
    if (b === undefined || b.state === 'disabled') {
      return {
        ok: false,
        kind: 'unsupported',
        field: 'backend',
        message: `the ${choice} backend is not configured on this service${choice === 'whisper' ? `: ${WHISPER_HINT}` : ''}`,
      };
    }
    if (!b.languages.includes(language)) {
      return {
        ok: false,
        kind: 'unsupported',
        field: 'language',
        message:
          `the ${choice} backend (${b.model ?? b.engine}) does not transcribe ${name}` +
          (language === 'vi' ? `: ${WHISPER_HINT}` : ''),
      };
    }
    if (b.state !== 'ready') {
      return { ok: false, kind: 'not_ready', field: 'backend', message: notReady(b, name) };
    }
    return { ok: true, backend: b.id };
  }
  const ready = candidates.find((b) => b.state === 'ready');
  if (ready !== undefined) return { ok: true, backend: ready.id };
  const waiting = candidates[0];
  if (waiting !== undefined) {
    return { ok: false, kind: 'not_ready', field: 'language', message: notReady(waiting, name) };
  }
  return {
    ok: false,
    kind: 'unsupported',
    field: 'language',
    message:
      language === 'vi'
        ? `no Vietnamese speech recognition model is loaded: ${WHISPER_HINT}`
        : `no English speech recognition backend is configured: install Debian's pocketsphinx and pocketsphinx-en-us, or ${WHISPER_HINT}`,
  };
}

function notReady(b: BackendStatus, language: string): string {
  return `${language} speech recognition (${b.id}) is not ready: ${b.reason ?? b.state}`;
}

/** Languages some ready backend transcribes now. */
export function availableLanguages(backends: readonly BackendStatus[]): Language[] {
  const set = new Set<Language>();
  for (const b of backends) if (b.state === 'ready') for (const l of b.languages) set.add(l);
  return (['vi', 'en'] as const).filter((l) => set.has(l));
}

/**
 * Why the service cannot transcribe (no backend ready), naming each configured backend's reason;
 * `undefined` once one is ready.
 */
export function notServingReason(backends: readonly BackendStatus[]): string | undefined {
  if (backends.some((b) => b.state === 'ready')) return undefined;
  const reasons = backends
    .filter((b) => b.state !== 'disabled')
    .map((b) => `${b.id}: ${b.reason ?? b.state}`);
  return reasons.length === 0
    ? 'no speech recognition backend is configured (STT_POCKETSPHINX=false and no STT_WHISPER_MODEL)'
    : reasons.join('; ');
}
