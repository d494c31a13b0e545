import type ort from 'onnxruntime-node';
import type { RgbImage } from '../domain/align.js';
import { type Detection, type Point, weightedNonMaxSuppression } from '../domain/geometry.js';
import { resizeRgb } from './image.js';
import { floatOutput, tensor } from './onnx.js';

/**
 * MediaPipe BlazeFace (short-range 128 or back/full 256 models) as ONNX. The input is the image
 * letterboxed to SxS, RGB scaled to [-1, 1]. Two heads: a 16x16 grid with 2 anchors a cell and an
 * 8x8 grid with 6; per anchor a score logit and 16 regressors: box centre offset, width, height,
 * then 6 keypoints (right eye, left eye, nose tip, mouth centre, right and left ear tragion) as
 * offsets from the anchor centre, all in input pixels. Overlapping boxes are blended by score
 * (MediaPipe's weighted NMS).
 *
 * Two ONNX layouts are understood: Keijiro Takahashi's conversion (input NHWC `input:0`, outputs
 * `Identity:0`..`Identity_3:0`) and tflite2onnx's (input NCHW, `classificators` / `regressors`).
 */

interface Head {
  readonly score: string;
  readonly box: string;
  /** First anchor of this head in its outputs. */
  readonly offset: number;
  readonly cells: number;
  readonly anchors: number;
}

export interface BlazeFaceLayout {
  readonly size: number;
  readonly layout: 'nhwc' | 'nchw';
  readonly input: string;
  readonly heads: readonly Head[];
}

export function blazeFaceLayout(session: ort.InferenceSession): BlazeFaceLayout {
  const input = session.inputNames[0];
  const meta = session.inputMetadata[0];
  const shape = meta !== undefined && 'shape' in meta ? meta.shape : [];
  if (input === undefined) throw new Error('the detector has no input');
  if (session.outputNames.includes('Identity:0')) {
    const size = Number(shape[1]);
    return {
      size,
      layout: 'nhwc',
      input,
      heads: [
        { score: 'Identity:0', box: 'Identity_2:0', offset: 0, cells: 16, anchors: 2 },
        { score: 'Identity_1:0', box: 'Identity_3:0', offset: 0, cells: 8, anchors: 6 },
      ],
    };
  }
  const score = session.outputNames.find((n) => n.includes('class'));
  const box = session.outputNames.find((n) => n.includes('regress'));
  if (score === undefined || box === undefined) {
    throw new Error(`not a BlazeFace model: outputs ${session.outputNames.join(', ')}`);
  }
  const size = Number(shape[2]);
  if (size === 192)
    return { size, layout: 'nchw', input, heads: [{ score, box, offset: 0, cells: 48, anchors: 1 }] };
  return {
    size,
    layout: 'nchw',
    input,
    heads: [
      { score, box, offset: 0, cells: 16, anchors: 2 },
      { score, box, offset: 512, cells: 8, anchors: 6 },
    ],
  };
}

export interface DetectOptions {
  readonly minScore: number;
  readonly nmsIou: number;
}

export async function detectBlazeFace(
  session: ort.InferenceSession,
  layout: BlazeFaceLayout,
  image: RgbImage,
  options: DetectOptions,
): Promise<Detection[]> {
  const s = layout.size;
  const { data, scaleX, scaleY, padX, padY } = await resizeRgb(image, s, s, true);
  const x = new Float32Array(s * s * 3);
  if (layout.layout === 'nhwc') {
    for (let i = 0; i < x.length; i++) x[i] = (data[i] as number) / 127.5 - 1;
  } else {
    const n = s * s;
    for (let i = 0; i < n; i++)
      for (let c = 0; c < 3; c++) x[c * n + i] = (data[i * 3 + c] as number) / 127.5 - 1;
  }
  const dims = layout.layout === 'nhwc' ? [1, s, s, 3] : [1, 3, s, s];
  const outputs = await session.run({ [layout.input]: tensor(x, dims) });
  const toImage = (px: number, py: number): Point => ({ x: (px - padX) * scaleX, y: (py - padY) * scaleY });
  const logit = Math.log(options.minScore / (1 - options.minScore));
  const found: Detection[] = [];
  for (const head of layout.heads) {
    const scores = floatOutput(outputs, head.score);
    const boxes = floatOutput(outputs, head.box);
    let i = head.offset;
    for (let cy = 0; cy < head.cells; cy++) {
      for (let cx = 0; cx < head.cells; cx++) {
        for (let a = 0; a < head.anchors; a++, i++) {
          const raw = scores[i] as number;
          if (raw < logit) continue;
          const r = boxes.subarray(i * 16, i * 16 + 16);
          const ax = ((cx + 0.5) / head.cells) * s;
          const ay = ((cy + 0.5) / head.cells) * s;
          const bx = ax + (r[0] as number);
          const by = ay + (r[1] as number);
          const bw = r[2] as number;
          const bh = r[3] as number;
          const p1 = toImage(bx - bw / 2, by - bh / 2);
          const p2 = toImage(bx + bw / 2, by + bh / 2);
          const landmarks: Point[] = [];
          for (let k = 0; k < 6; k++)
            landmarks.push(toImage(ax + (r[4 + 2 * k] as number), ay + (r[5 + 2 * k] as number)));
          found.push({
            box: { x1: p1.x, y1: p1.y, x2: p2.x, y2: p2.y },
            score: 1 / (1 + Math.exp(-raw)),
            landmarks,
            layout: 'blazeface6',
          });
        }
      }
    }
  }
  return weightedNonMaxSuppression(found, options.nmsIou);
}
