/**
 * The code search service (services/codesearch) as the reasoning engine uses it: a finding's name
 * to ICD-10-CM codes (`POST /search` with `code_types: ['ICD10']`) and a diagnosis code to its
 * title (`GET /codes/ICD10/<code>`). Every failure is a `CodeSearchUnavailable` whose message says
 * why; the pipeline turns it into a warning, never a failed request.
 *
 * A finding's name ("Fever") matches many titles equally well lexically ("Q fever", "Yellow
 * fever", …), so `candidates` results are asked for and the codes whose title *is* the finding
 * come first: the title equal to the name ("Cough"), then a title that starts with it and a comma
 * or parenthesis ("Fever, unspecified"), then one that holds it as a phrase; the code search's
 * order (its score) within each group.
 *
 * Calls go through the kit's HttpClient (its deadline, the caller's signal, metrics under
 * `upstream="codesearch"`).
 */
import { HttpClient, withoutTrailingSlashes, type CallSpec, type KitMetrics } from '@clinicalsuite/kit';
import type { Registry } from 'prom-client';
import type { ReasoningConfig } from '../config.js';
import { foldTerm } from '../extract/text.js';

export interface CodeHit {
  readonly code: string;
  readonly system: 'ICD-10-CM';
  readonly title: string;
  readonly score: number;
}

export interface CodeSearchOptions {
  readonly baseUrl: string;
  readonly token?: string;
  readonly timeoutMs: number;
  readonly topK: number;
  /** Results asked of the code search before the title-match ordering (default 50). */
  readonly candidates?: number;
  /** The service's metrics, where the calls are counted. */
  readonly metrics?: KitMetrics | Registry | undefined;
}

/**
 * The code search of CODE_SEARCH_URL (its token, REASONING_CODE_SEARCH_*), its calls counted in
 * `metrics`; null without CODE_SEARCH_URL.
 */
export function configuredCodeSearch(config: ReasoningConfig, metrics: KitMetrics): CodeSearchClient | null {
  if (config.CODE_SEARCH_URL === undefined) return null;
  return new CodeSearchClient({
    baseUrl: config.CODE_SEARCH_URL,
    metrics,
    ...(config.CODE_SEARCH_API_TOKEN === undefined ? {} : { token: config.CODE_SEARCH_API_TOKEN }),
    timeoutMs: config.REASONING_CODE_SEARCH_TIMEOUT_MS,
    topK: config.REASONING_CODE_SEARCH_TOP_K,
    candidates: config.REASONING_CODE_SEARCH_CANDIDATES,
  });
}

export class CodeSearchUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CodeSearchUnavailable';
  }
}

interface SearchBody {
  readonly results?: readonly { code?: unknown; title?: unknown; title_en?: unknown; score?: unknown }[];
}

interface DetailBody {
  readonly code?: unknown;
  readonly title_en?: unknown;
  readonly title?: unknown;
}

const MAX_CACHED = 20_000;

export class CodeSearchClient {
  readonly baseUrl: string;
  /** Titles of diagnosis codes already looked up (the code sets change only with a new import). */
  readonly #titles = new Map<string, string | null>();
  /** Codes already found per query: queries are feature labels, a bounded set. */
  readonly #searches = new Map<string, CodeHit[]>();
  readonly #http: HttpClient;

  constructor(private readonly options: CodeSearchOptions) {
    this.baseUrl = withoutTrailingSlashes(options.baseUrl);
    this.#http = new HttpClient({
      name: 'codesearch',
      baseUrl: this.baseUrl,
      token: options.token,
      timeoutMs: options.timeoutMs,
      failures: {
        unreachable: (f) => this.#unavailable(f.afterHeaders, messageOf(f.error), f.error),
        timeout: (f) =>
          this.#unavailable(f.afterHeaders, `no answer within ${this.options.timeoutMs} ms`, f.error),
      },
      metrics: options.metrics,
    });
  }

  /** ICD-10-CM codes for a finding's words, best first. */
  async search(query: string, signal: AbortSignal): Promise<CodeHit[]> {
    const cached = this.#searches.get(query);
    if (cached !== undefined) return cached;
    const body = (await this.#request(
      '/search',
      {
        method: 'POST',
        json: {
          query,
          code_types: ['ICD10'],
          top_k: Math.max(this.options.topK, this.options.candidates ?? 50),
        },
      },
      signal,
    )) as SearchBody | null;
    const results: unknown = body?.results;
    if (!Array.isArray(results)) throw new CodeSearchUnavailable('code search answered without `results`');
    const hits = (results as NonNullable<SearchBody['results']>).flatMap((r) =>
      typeof r.code === 'string' && typeof r.score === 'number'
        ? [
            {
              code: r.code,
              system: 'ICD-10-CM' as const,
              title:
                typeof r.title_en === 'string' ? r.title_en : typeof r.title === 'string' ? r.title : r.code,
              score: r.score,
            },
          ]
        : [],
    );
    const name = foldTerm(query);
    const group = (title: string): number => {
      const t = foldTerm(title);
      if (t === name) return 0;
      if (t.startsWith(`${name},`) || t.startsWith(`${name} (`)) return 1;
      return ` ${t} `.includes(` ${name} `) ? 2 : 3;
    };
    const found = hits
      .map((hit, order) => ({ hit, order, group: group(hit.title) }))
      .sort((a, b) => a.group - b.group || a.order - b.order)
      .slice(0, this.options.topK)
      .map((x) => x.hit);
    if (this.#searches.size < MAX_CACHED) this.#searches.set(query, found);
    return found;
  }

  /** The English title of an ICD-10-CM code; null when the code search does not hold it. */
  async title(code: string, signal: AbortSignal): Promise<string | null> {
    if (this.#titles.has(code)) return this.#titles.get(code) ?? null;
    const body = (await this.#request(
      `/codes/ICD10/${encodeURIComponent(code)}`,
      { method: 'GET' },
      signal,
      true,
    )) as DetailBody | null;
    const title =
      body === null
        ? null
        : typeof body.title_en === 'string'
          ? body.title_en
          : typeof body.title === 'string'
            ? body.title
            : null;
    if (this.#titles.size < MAX_CACHED) this.#titles.set(code, title);
    return title;
  }

  async #request(
    path: string,
    init: Pick<CallSpec, 'method' | 'json'>,
    signal: AbortSignal,
    notFoundIsNull = false,
  ): Promise<unknown> {
    const res = await this.#http.request({ ...init, path, signal });
    if (notFoundIsNull && res.status === 404) return null;
    if (!res.ok) {
      throw new CodeSearchUnavailable(
        `code search at ${this.#http.baseUrl} answered ${res.status}${detail(this.#http.redact(res.text))}`,
      );
    }
    try {
      return JSON.parse(res.text) as unknown;
    } catch {
      throw new CodeSearchUnavailable(
        `code search at ${this.#http.baseUrl} answered something other than JSON`,
      );
    }
  }

  /** Nothing answered, not in time, or the answer broke off. */
  #unavailable(afterHeaders: boolean, why: string, cause: unknown): CodeSearchUnavailable {
    return new CodeSearchUnavailable(
      afterHeaders
        ? `code search at ${this.#http.baseUrl} broke off its answer`
        : `code search at ${this.#http.baseUrl} is unreachable: ${why}`,
      { cause },
    );
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function detail(text: string): string {
  try {
    const body = JSON.parse(text) as { detail?: unknown };
    return typeof body.detail === 'string' ? `: ${body.detail}` : '';
  } catch {
    return '';
  }
}
