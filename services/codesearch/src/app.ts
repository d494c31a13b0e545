import { performance } from 'node:perf_hooks';
import { createKit, serviceAuth, type KitApp, type Logger, type Resource } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import type { Catalog } from './adapters/catalog.js';
import {
  abbreviationsOf,
  catalogFor,
  codeSetsResource,
  embeddingModelResource,
  LOADING_CODE_SETS,
  type CodeSetsDeps,
  type LoadedCodeSets,
} from './adapters/code-sets.js';
import { CodeStore } from './adapters/code-store.js';
import type { CodesearchConfig } from './config.js';
import type { AbbreviationTable } from './domain/abbreviations.js';
import { catalogGauges, createCodesearchMetrics } from './metrics.js';
import { API_INFO, codesearchRoutes } from './routes/index.js';
import type { CodesearchRuntime } from './routes/runtime.js';

export const CODESEARCH_VERSION = '1.0.0';

export interface CodesearchDeps {
  readonly config: CodesearchConfig;
  readonly logger?: Logger;
  readonly gpu?: GpuStatusReader;
  readonly processMetrics?: boolean;
  /** Node options for the embedding worker threads (default: the process's own). */
  readonly workerExecArgv?: readonly string[];
}

export interface CodesearchService {
  readonly kit: KitApp;
  readonly catalog: Catalog;
  /** Imported, loaded (ready), then watched for imports; the embedding model loads after them. */
  readonly codeSets: Resource<LoadedCodeSets>;
  readonly abbreviations: AbbreviationTable;
  close(): Promise<void>;
}

/**
 * The code search service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `codesearch` scope (CODE_SEARCH_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildCodesearchApp(deps: CodesearchDeps): CodesearchService {
  const { config } = deps;
  const auth = serviceAuth(config, {
    scope: 'codesearch',
    tokenEnv: 'CODE_SEARCH_API_TOKEN',
    token: config.CODE_SEARCH_API_TOKEN,
  });
  const kit = createKit({
    service: 'codesearch',
    ...API_INFO,
    version: CODESEARCH_VERSION,
    config,
    startingReason: LOADING_CODE_SETS,
    gpuStatusPath: '/gpu_status',
    ...(auth === undefined ? {} : { auth }),
    logger: deps.logger,
    gpu: deps.gpu,
    processMetrics: deps.processMetrics,
  });
  const store = new CodeStore(config.dataDir);
  // Closed last: stops a vector build, ends its worker threads and frees the embedding model.
  const catalog = kit.own(catalogFor(config, store, kit.logger), (c) => c.close());
  const metrics = createCodesearchMetrics(kit.metrics, catalogGauges(catalog));
  const sets: CodeSetsDeps = {
    config,
    store,
    catalog,
    onReload: (result) => metrics.imports.inc({ result }),
    ...(deps.workerExecArgv === undefined ? {} : { workerExecArgv: deps.workerExecArgv }),
  };
  const codeSets = kit.resource(codeSetsResource(sets));
  if (config.CODESEARCH_EMBEDDINGS === 'off')
    catalog.setEmbedder(undefined, 'embeddings are off (CODESEARCH_EMBEDDINGS=off)');
  else kit.resource(embeddingModelResource(sets, codeSets));
  const rt: CodesearchRuntime = {
    config,
    catalog,
    get abbreviations() {
      return abbreviationsOf(codeSets);
    },
    readiness: kit.readiness,
    gate: kit.gate,
    metrics,
    startedAt: performance.now(),
    version: CODESEARCH_VERSION,
  };
  const app = kit.mount(codesearchRoutes(rt));
  return {
    kit: app,
    catalog,
    codeSets,
    get abbreviations() {
      return rt.abbreviations;
    },
    close: () => app.close(),
  };
}
