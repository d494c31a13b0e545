/**
 * `MODEL_MIRROR`: an HTTP server that holds catalogue models at their paths under a models
 * directory (`<MODEL_MIRROR>/<entry.file>`), tried before a catalogue model's own sources
 * (README.md, "Models").
 */
import { withoutTrailingSlashes } from '../urls.js';
import type { ModelEntry } from './manifest.js';
import type { SourceEnv } from './sources.js';

export const MODEL_MIRROR_ENV = 'MODEL_MIRROR';

/** `MODEL_MIRROR` holds something other than an http(s) base URL. */
export class ModelMirrorError extends Error {
  readonly code = 'invalid_model_mirror';
  constructor(shown: string, why: string) {
    super(
      `invalid ${MODEL_MIRROR_ENV}${shown}: ${why}; ` +
        'expected the http:// or https:// base URL of a models directory, e.g. http://10.0.0.5:8080',
    );
    this.name = 'ModelMirrorError';
  }
}

/**
 * The mirror's base URL from `env`, without trailing slashes; undefined when `MODEL_MIRROR` is
 * unset or empty. Throws {@link ModelMirrorError} when it is not an http(s) URL that a path can
 * be appended to.
 */
export function modelMirror(env: SourceEnv): string | undefined {
  const value = env[MODEL_MIRROR_ENV];
  if (value === undefined || value === '') return undefined;
  const shown = ` "${value}"`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ModelMirrorError(shown, 'not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ModelMirrorError(shown, `the scheme is ${url.protocol.slice(0, -1)}`);
  // The value is not repeated: it holds a password.
  if (url.username !== '' || url.password !== '')
    throw new ModelMirrorError('', 'the URL holds credentials, which the fetch does not send');
  if (url.search !== '' || url.hash !== '')
    throw new ModelMirrorError(shown, 'a base URL takes no query or fragment');
  return withoutTrailingSlashes(url.href);
}

/** Where the mirror at `base` holds the entry's file: `<base>/<file>`, each segment URL-encoded. */
export function mirrorUrl(base: string, entry: Pick<ModelEntry, 'file'>): string {
  return `${base}/${entry.file.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * The sha256 values a mirror's copy of the entry may have: the entry's, else those its sources
 * name (sources that serve different builds); none when nothing is known.
 */
export function mirrorHashes(entry: Pick<ModelEntry, 'sha256' | 'sources'>): readonly string[] {
  if (entry.sha256 !== undefined) return [entry.sha256];
  const named = entry.sources.flatMap((s) =>
    typeof s === 'string' || s.sha256 === undefined ? [] : [s.sha256],
  );
  return [...new Set(named)];
}
