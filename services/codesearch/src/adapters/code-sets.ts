import { readFile } from 'node:fs/promises';
import type { Logger, OpenContext, Resource, ResourceSpec } from '@clinicalsuite/kit';
import type { CodesearchConfig } from '../config.js';
import { AbbreviationTable, parseAbbreviationsCsv } from '../domain/abbreviations.js';
import { parseOverlayCsv } from '../domain/overlay.js';
import { importBuiltinSets } from './builtin-sets.js';
import { Catalog } from './catalog.js';
import type { CodeStore } from './code-store.js';
import { loadEmbedder, type Embedder } from './embedder.js';
import { waitForFiles } from './wait-files.js';

/**
 * What the service opens after listening, as kit resources: the code sets (the built-in sets
 * imported, the store loaded with the curated terms over it, then watched for imports made while
 * running), which make it ready; then the embedding model, which only adds vectors to what is
 * searched, so the service is ready without it.
 */

export interface LoadedCodeSets {
  readonly abbreviations: AbbreviationTable;
  /** Stops watching the store. */
  stop(): void;
}

export interface CodeSetsDeps {
  readonly config: CodesearchConfig;
  readonly store: CodeStore;
  readonly catalog: Catalog;
  /** A reload after an import: ok, or failed (logged; the loaded sets stay). */
  readonly onReload: (result: 'ok' | 'error') => void;
  /** Node options for the embedding worker threads (default: the process's own). */
  readonly workerExecArgv?: readonly string[];
}

export const LOADING_CODE_SETS = 'loading the code sets';

const NO_ABBREVIATIONS = new AbbreviationTable([]);

/** What the service searches, from the configuration (nothing loaded until the code sets open). */
export function catalogFor(config: CodesearchConfig, store: CodeStore, logger: Logger): Catalog {
  return new Catalog({
    store,
    dataDir: config.dataDir,
    embedTypes: new Set(config.CODESEARCH_EMBED_TYPES),
    batchSize: config.CODESEARCH_EMBED_BATCH,
    logger,
  });
}

/** The abbreviation table of the loaded code sets (empty until they are). */
export function abbreviationsOf(codeSets: Resource<LoadedCodeSets>): AbbreviationTable {
  return codeSets.value?.abbreviations ?? NO_ABBREVIATIONS;
}

/** The code sets as a kit resource: the service is ready once they are loaded. */
export function codeSetsResource(deps: CodeSetsDeps): ResourceSpec<LoadedCodeSets> {
  return {
    name: 'the code sets',
    open: (ctx) => openCodeSets(deps, ctx),
    close: (loaded) => loaded.stop(),
    failureReason: (error) => `the code sets failed to load: ${error.message}`,
  };
}

/** The embedding model as an optional kit resource, loaded once the code sets are. */
export function embeddingModelResource(
  deps: CodeSetsDeps,
  codeSets: Resource<LoadedCodeSets>,
): ResourceSpec<Embedder> {
  return {
    name: 'the embedding model',
    optional: true,
    open: (ctx) => openEmbeddingModel(deps, codeSets.opened(), ctx),
    describe: (e) => ({ fields: { model: deps.config.embeddingModelPath, dim: e.dim, id: e.id } }),
  };
}

export async function openCodeSets(deps: CodeSetsDeps, ctx: OpenContext): Promise<LoadedCodeSets> {
  const { config, catalog } = deps;
  ctx.opening(LOADING_CODE_SETS);
  const overlay = parseOverlayCsv(await readFile(config.viTermsPath, 'utf8'));
  const abbreviations = new AbbreviationTable(
    parseAbbreviationsCsv(await readFile(config.abbreviationsPath, 'utf8')),
  );
  catalog.setOverlay(overlay);
  await importBuiltinSets(deps.store, config.builtinSets, ctx.logger);
  await catalog.load();
  return { abbreviations, stop: watchStore(deps, ctx.logger) };
}

/** Reloads the catalog when an import changed the store; returns what stops it. */
function watchStore({ config, catalog, onReload }: CodeSetsDeps, logger: Logger): () => void {
  let stopped = false;
  let poller: NodeJS.Timeout | undefined;
  const tick = (): void => {
    poller = setTimeout(() => {
      catalog.reloadIfChanged().then(
        (changed) => {
          if (changed) onReload('ok');
          if (!stopped) tick();
        },
        (error: unknown) => {
          onReload('error');
          logger.error({ err: error }, 'reloading the code sets failed; the loaded sets stay');
          if (!stopped) tick();
        },
      );
    }, config.CODESEARCH_RELOAD_POLL_MS);
    poller.unref();
  };
  if (config.CODESEARCH_RELOAD_POLL_MS > 0) tick();
  return () => {
    stopped = true;
    if (poller !== undefined) clearTimeout(poller);
  };
}

/**
 * Waits for the embedding model's files (once the code sets are in), loads it and hands it to the
 * catalog, which builds the title vectors with it and frees it when it closes.
 */
export async function openEmbeddingModel(
  deps: CodeSetsDeps,
  codeSetsOpened: Promise<unknown>,
  ctx: OpenContext,
): Promise<Embedder> {
  const { config, catalog } = deps;
  await ctx.untilClosed(codeSetsOpened);
  const paths = [config.embeddingModelPath, config.embeddingTokenizerPath];
  catalog.setEmbedder(
    undefined,
    `waiting for ${paths.join(' and ')}: run \`npm run models -- fetch ${config.embedderIds.model}\` and ` +
      `\`npm run models -- fetch ${config.embedderIds.tokenizer}\`, or mount a model there`,
    true,
  );
  if (!(await waitForFiles(paths, config.MODEL_POLL_MS, ctx.signal))) throw new Error('closed');
  let embedder: Embedder;
  try {
    embedder = await loadEmbedder({
      modelPath: config.embeddingModelPath,
      tokenizerPath: config.embeddingTokenizerPath,
      threads: config.threads,
      maxTokens: config.CODESEARCH_EMBEDDING_MAX_TOKENS,
      queryPrefix: config.CODESEARCH_EMBEDDING_QUERY_PREFIX,
      passagePrefix: config.CODESEARCH_EMBEDDING_PASSAGE_PREFIX,
      ...(deps.workerExecArgv === undefined ? {} : { workerExecArgv: deps.workerExecArgv }),
    });
  } catch (error) {
    catalog.setEmbedder(undefined, `the embedding model failed to load: ${(error as Error).message}`);
    throw error;
  }
  if (ctx.signal.aborted) {
    await embedder.dispose();
    throw new Error('closed');
  }
  catalog.setEmbedder(embedder);
  return embedder;
}
