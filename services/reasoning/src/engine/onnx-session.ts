import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EngineUnavailableError } from './errors.js';
import type { CompiledModel } from './model.js';
import type { OnnxEngineOptions } from './onnx-engine.js';
import { buildScoringGraph, buildScoringGraphFiles } from './onnx-graph.js';

/**
 * Opening the onnxruntime session for a compiled model: on the device asked for (CUDA, or CPU with
 * the reason when `auto` cannot have CUDA), from the graph in memory, or, when its tables are too
 * large for one protobuf message, from a model file whose tables are ONNX external data.
 */

export type Ort = typeof import('onnxruntime-node');
export type Session = import('onnxruntime-node').InferenceSession;

/** 1 GiB: well under protobuf's 2 GiB, so the inline graph never meets the limit. */
export const EXTERNAL_TABLES_ABOVE_BYTES = 2 ** 30;

/** The session for `model`: inline below `externalTablesAboveBytes` of tables, else from files. */
export async function openSession(
  ort: Ort,
  model: CompiledModel,
  options: OnnxEngineOptions,
): Promise<{ session: Session; device: string; fallbackReason?: string }> {
  const tableBytes = 4 * 4 * model.features.length * model.hypotheses;
  return tableBytes > (options.externalTablesAboveBytes ?? EXTERNAL_TABLES_ABOVE_BYTES)
    ? createSessionFromFiles(ort, model, options)
    : createSession(ort, buildScoringGraph(model), options);
}

export async function importOrt(): Promise<Ort> {
  try {
    const module = (await import('onnxruntime-node')) as Ort & { default?: Ort };
    return module.default ?? module;
  } catch (error) {
    throw new EngineUnavailableError(`onnxruntime-node cannot load: ${message(error)}`, { cause: error });
  }
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function createSession(
  ort: Ort,
  graph: Uint8Array | string,
  options: OnnxEngineOptions,
): Promise<{ session: Session; device: string; fallbackReason?: string }> {
  const requested = options.device ?? 'cpu';
  const base: import('onnxruntime-node').InferenceSession.SessionOptions = {
    intraOpNumThreads: options.threads ?? 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
  };
  // The model's bytes, or the path of a model file whose tables are external data beside it. Two
  // calls that read alike: `create` has one overload for a path and one for bytes, none for either.
  const load = (sessionOptions: import('onnxruntime-node').InferenceSession.SessionOptions) =>
    typeof graph === 'string'
      ? ort.InferenceSession.create(graph, sessionOptions)
      : ort.InferenceSession.create(graph, sessionOptions);
  let fallbackReason: string | undefined;
  if (requested === 'cuda' || (requested === 'auto' && options.gpuAvailable === true)) {
    const deviceId = options.cudaDeviceId ?? 0;
    try {
      const session = await load({
        ...base,
        executionProviders: [{ name: 'cuda', deviceId }],
      });
      return { session, device: `cuda:${String(deviceId)}` };
    } catch (error) {
      if (requested === 'cuda') {
        throw new EngineUnavailableError(
          `the CUDA execution provider is not usable (${message(error)}); ` +
            'install onnxruntime-node with its CUDA provider libraries or configure the cpu device',
          { cause: error },
        );
      }
      fallbackReason = `CUDA execution provider not usable, running on CPU: ${message(error)}`;
    }
  } else if (requested === 'auto') {
    fallbackReason = 'no GPU visible, running on CPU';
  }
  const session = await load({ ...base, executionProviders: ['cpu'] });
  return { session, device: 'cpu', ...(fallbackReason === undefined ? {} : { fallbackReason }) };
}

/**
 * The graph and its tables written to a private temporary directory, the session opened from the
 * model file (onnxruntime reads the tables while it loads), the directory removed after.
 */
async function createSessionFromFiles(
  ort: Ort,
  model: CompiledModel,
  options: OnnxEngineOptions,
): Promise<{ session: Session; device: string; fallbackReason?: string }> {
  let dir: string | undefined;
  try {
    dir = await mkdtemp(join(options.tempDir ?? tmpdir(), 'reasoning-graph-'));
    const files = buildScoringGraphFiles(model, 'tables.bin');
    const out = await open(join(dir, 'tables.bin'), 'w');
    try {
      for (const table of files.tables) {
        const bytes = table.bytes();
        await out.write(bytes, 0, bytes.length, table.offset);
      }
    } finally {
      await out.close();
    }
    await writeFile(join(dir, 'model.onnx'), files.model);
    return await createSession(ort, join(dir, 'model.onnx'), options);
  } catch (error) {
    if (error instanceof EngineUnavailableError) throw error;
    throw new EngineUnavailableError(`the scoring graph could not be written or loaded: ${message(error)}`, {
      cause: error,
    });
  } finally {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
}
