import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Readiness, serviceAuth, buildApp, createLogger, type KitApp, type Logger } from '@clinicalsuite/kit';
import type { GpuStatusReader } from '@clinicalsuite/kit/gpu';
import { importBuiltinSets } from './adapters/builtin-sets.js';
import { Catalog } from './adapters/catalog.js';
import { CodeStore } from './adapters/code-store.js';
import { loadEmbedder } from './adapters/embedder.js';
import { waitForFiles } from './adapters/wait-files.js';
import type { CodesearchConfig } from './config.js';
import { AbbreviationTable, parseAbbreviationsCsv } from './domain/abbreviations.js';
import { parseOverlayCsv } from './domain/overlay.js';
import { createCodesearchMetrics } from './metrics.js';
import { codeRoute, codeTypesRoute } from './routes/codes.js';
import { healthRoute, rootRoute, statusRoute } from './routes/info.js';
import type { CodesearchRuntime } from './routes/runtime.js';
import { searchRoute } from './routes/search.js';

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
  readonly abbreviations: AbbreviationTable;
  /** Imports the built-in sets, loads the store (ready), then the embedding model in the background. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The code search service: every route but the probes, /metrics and the documentation needs a bearer token
 * with the `codesearch` scope (CODE_SEARCH_API_TOKEN, or AUTH_TOKENS_FILE); AUTH_DISABLED=true opens it.
 */
export function buildCodesearchApp(deps: CodesearchDeps): CodesearchService {
  const { config } = deps;
  const logger = deps.logger ?? createLogger({ service: 'codesearch', level: config.LOG_LEVEL });
  const readiness = new Readiness('loading the code sets');
  const store = new CodeStore(config.dataDir);
  let abbreviations = new AbbreviationTable([]);
  const catalog = new Catalog({
    store,
    dataDir: config.dataDir,
    embedTypes: new Set(config.CODESEARCH_EMBED_TYPES),
    batchSize: config.CODESEARCH_EMBED_BATCH,
    logger,
  });
  const stop = new AbortController();
  let poller: NodeJS.Timeout | undefined;
  const auth = serviceAuth(config, {
    scope: 'codesearch',
    tokenEnv: 'CODE_SEARCH_API_TOKEN',
    token: config.CODE_SEARCH_API_TOKEN,
  });
  const startedAt = performance.now();
  let runtime: CodesearchRuntime | undefined;
  const kit = buildApp({
    service: 'codesearch',
    title: 'Medical code search service',
    version: CODESEARCH_VERSION,
    description:
      'ICD-10 (ICD-10-CM), ICD-10-PCS procedures and imported ICPC-2, CPT and service codes, searched by ' +
      'Vietnamese or English text: BM25 with diacritic folding and abbreviations, fused with embeddings.',
    config,
    logger,
    readiness,
    gpuStatusPath: '/gpu_status',
    ...(deps.gpu === undefined ? {} : { gpu: deps.gpu }),
    ...(auth === undefined ? {} : { auth }),
    ...(deps.processMetrics === undefined ? {} : { processMetrics: deps.processMetrics }),
    routes: ({ gate, metrics }) => {
      const codes = (): Map<string, number> => {
        const out = new Map<string, number>();
        for (const [t, [a, b]] of catalog.snapshot?.index.typeRanges ?? []) out.set(t, b - a);
        return out;
      };
      const vectors = (): Map<string, number> => {
        const out = new Map<string, number>();
        for (const [t, v] of catalog.snapshot?.vectors ?? []) out.set(t, v.state === 'ready' ? v.total : 0);
        return out;
      };
      runtime = {
        config,
        catalog,
        get abbreviations() {
          return abbreviations;
        },
        readiness,
        gate,
        metrics: createCodesearchMetrics(metrics, {
          codes,
          vectors,
          titlesEmbedded: () => catalog.titlesEmbedded,
        }),
        startedAt,
        version: CODESEARCH_VERSION,
      };
      return [
        rootRoute(runtime),
        healthRoute(runtime),
        statusRoute(runtime),
        searchRoute(runtime),
        codeTypesRoute(runtime),
        codeRoute(runtime),
      ];
    },
  });

  const overlayAndTable = async () => {
    const overlay = parseOverlayCsv(await readFile(config.viTermsPath, 'utf8'));
    const table = new AbbreviationTable(
      parseAbbreviationsCsv(await readFile(config.abbreviationsPath, 'utf8')),
    );
    return { overlay, table };
  };

  const loadModel = async (cat: Catalog): Promise<void> => {
    if (config.CODESEARCH_EMBEDDINGS === 'off') {
      cat.setEmbedder(undefined, 'embeddings are off (CODESEARCH_EMBEDDINGS=off)');
      return;
    }
    const paths = [config.embeddingModelPath, config.embeddingTokenizerPath];
    cat.setEmbedder(
      undefined,
      `waiting for ${paths.join(' and ')}: run \`npm run models -- fetch codesearch-embedder\` and ` +
        '`npm run models -- fetch codesearch-embedder-tokenizer`, or mount a model there',
      true,
    );
    const found = await waitForFiles(paths, config.MODEL_POLL_MS, stop.signal);
    if (!found) return;
    try {
      const embedder = await loadEmbedder({
        modelPath: config.embeddingModelPath,
        tokenizerPath: config.embeddingTokenizerPath,
        threads: config.threads,
        maxTokens: config.CODESEARCH_EMBEDDING_MAX_TOKENS,
        queryPrefix: config.CODESEARCH_EMBEDDING_QUERY_PREFIX,
        passagePrefix: config.CODESEARCH_EMBEDDING_PASSAGE_PREFIX,
        ...(deps.workerExecArgv === undefined ? {} : { workerExecArgv: deps.workerExecArgv }),
      });
      if (stop.signal.aborted) {
        await embedder.dispose();
        return;
      }
      cat.setEmbedder(embedder);
      logger.info(
        { model: config.embeddingModelPath, dim: embedder.dim, id: embedder.id },
        'embedding model loaded',
      );
    } catch (err) {
      cat.setEmbedder(undefined, `the embedding model failed to load: ${(err as Error).message}`);
      logger.error({ err, model: config.embeddingModelPath }, 'the embedding model failed to load');
    }
  };

  return {
    kit,
    catalog,
    get abbreviations() {
      return abbreviations;
    },
    async start() {
      try {
        const { overlay, table } = await overlayAndTable();
        abbreviations = table;
        catalog.setOverlay(overlay);
        await importBuiltinSets(store, config.builtinSets, logger);
        await catalog.load();
        readiness.setReady();
      } catch (err) {
        readiness.setNotReady(`the code sets failed to load: ${(err as Error).message}`);
        logger.error({ err }, 'the code sets failed to load');
        return;
      }
      const cat = catalog;
      if (config.CODESEARCH_RELOAD_POLL_MS > 0) {
        const tick = (): void => {
          poller = setTimeout(() => {
            cat.reloadIfChanged().then(
              (changed) => {
                if (changed) runtime?.metrics.imports.inc({ result: 'ok' });
                if (!stop.signal.aborted) tick();
              },
              (err: unknown) => {
                runtime?.metrics.imports.inc({ result: 'error' });
                logger.error({ err }, 'reloading the code sets failed; the loaded sets stay');
                if (!stop.signal.aborted) tick();
              },
            );
          }, config.CODESEARCH_RELOAD_POLL_MS);
          poller.unref();
        };
        tick();
      }
      void loadModel(cat);
    },
    async close() {
      stop.abort();
      if (poller !== undefined) clearTimeout(poller);
      await catalog.close();
    },
  };
}
