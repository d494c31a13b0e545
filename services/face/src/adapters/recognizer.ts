import type ort from 'onnxruntime-node';
import type { RgbImage } from '../domain/align.js';
import { l2Normalize } from '../domain/similarity.js';
import { floatOutput, tensor } from './onnx.js';

/**
 * An ArcFace-family recognizer (ArcFace, MobileFaceNet, SFace style): a 112x112 face aligned on the
 * ArcFace template in, an embedding out (512-d for ArcFace), L2-normalised here. Pixels are fed
 * NCHW as (x - mean) / std in the channel order the model was trained with.
 */

export interface RecognizerOptions {
  readonly channels: 'rgb' | 'bgr';
  readonly mean: number;
  readonly std: number;
}

export interface RecognizerInfo {
  readonly input: string;
  readonly output: string;
  readonly size: number;
  readonly dim: number;
}

export function recognizerInfo(session: ort.InferenceSession): RecognizerInfo {
  const input = session.inputNames[0];
  const output = session.outputNames[0];
  const inMeta = session.inputMetadata[0];
  const outMeta = session.outputMetadata[0];
  const inShape = inMeta !== undefined && 'shape' in inMeta ? inMeta.shape : [];
  const outShape = outMeta !== undefined && 'shape' in outMeta ? outMeta.shape : [];
  const size = Number(inShape[2]);
  const dim = Number(outShape[outShape.length - 1]);
  if (input === undefined || output === undefined || inShape.length !== 4 || Number(inShape[1]) !== 3) {
    throw new Error(`not a face recognizer with an NCHW RGB input: input shape [${inShape.join(', ')}]`);
  }
  if (size !== 112 || Number(inShape[3]) !== 112) {
    throw new Error(
      `the recognizer takes ${String(inShape[2])}x${String(inShape[3])} faces; 112x112 aligned faces are supported`,
    );
  }
  if (!Number.isInteger(dim) || dim < 2)
    throw new Error(`the recognizer's output dimension is unknown (${outShape.join(', ')})`);
  return { input, output, size, dim };
}

export async function embedFace(
  session: ort.InferenceSession,
  info: RecognizerInfo,
  face: RgbImage,
  options: RecognizerOptions,
): Promise<Float32Array> {
  const n = info.size * info.size;
  const x = new Float32Array(3 * n);
  const [r, g, b] = options.channels === 'rgb' ? [0, 1, 2] : [2, 1, 0];
  for (let i = 0; i < n; i++) {
    x[r * n + i] = ((face.data[i * 3] as number) - options.mean) / options.std;
    x[g * n + i] = ((face.data[i * 3 + 1] as number) - options.mean) / options.std;
    x[b * n + i] = ((face.data[i * 3 + 2] as number) - options.mean) / options.std;
  }
  const outputs = await session.run({ [info.input]: tensor(x, [1, 3, info.size, info.size]) });
  const raw = floatOutput(outputs, info.output);
  if (raw.length !== info.dim)
    throw new Error(`the recognizer returned ${String(raw.length)} values, ${String(info.dim)} expected`);
  return l2Normalize(raw);
}
