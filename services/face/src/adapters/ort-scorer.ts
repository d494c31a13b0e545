import ort from 'onnxruntime-node';
import type { CoarseScorer } from '../domain/embedding-index.js';
import { scoreModel } from './score-model.js';

/** The registry's coarse scan on onnxruntime's int8 matrix multiply (see embedding-index.ts). */
export async function loadCoarseScorer(
  dim: number,
  threads: number,
): Promise<{ scorer: CoarseScorer; dispose: () => Promise<void> }> {
  const session = await ort.InferenceSession.create(scoreModel(dim), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const scorer: CoarseScorer = async (rows, count, queries, k) => {
    const out = await session.run({
      m: new ort.Tensor('uint8', rows, [count, dim]),
      q: new ort.Tensor('int8', queries, [dim, k]),
    });
    const s = out['s'];
    if (s?.type !== 'int32') throw new Error('the score model returned no int32 scores');
    return s.data as Int32Array;
  };
  return { scorer, dispose: () => session.release() };
}
