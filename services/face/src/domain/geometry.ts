/** Boxes, landmarks and non-maximum suppression, in pixels of the decoded (upright) image. */

export interface Point {
  readonly x: number;
  readonly y: number;
}

export interface Box {
  readonly x1: number;
  readonly y1: number;
  readonly x2: number;
  readonly y2: number;
}

/**
 * What a detector's landmarks are, in order of the points:
 * - `five`: eye, eye (image left, then right), nose tip, mouth corner, mouth corner (SCRFD/RetinaFace/YuNet);
 * - `blazeface6`: eye, eye (image left, then right), nose tip, mouth centre, ear, ear (BlazeFace).
 */
export type LandmarkLayout = 'five' | 'blazeface6';

export interface Detection {
  readonly box: Box;
  readonly score: number;
  readonly landmarks: readonly Point[];
  readonly layout: LandmarkLayout;
}

/** The spec's face location: integer top, right, bottom, left, inside the image. */
export interface FaceLocation {
  readonly top: number;
  readonly right: number;
  readonly bottom: number;
  readonly left: number;
}

export function area(b: Box): number {
  return Math.max(0, b.x2 - b.x1) * Math.max(0, b.y2 - b.y1);
}

export function iou(a: Box, b: Box): number {
  const x1 = Math.max(a.x1, b.x1);
  const y1 = Math.max(a.y1, b.y1);
  const x2 = Math.min(a.x2, b.x2);
  const y2 = Math.min(a.y2, b.y2);
  const inter = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  const union = area(a) + area(b) - inter;
  return union <= 0 ? 0 : inter / union;
}

/** Greedy NMS: highest score first, dropping boxes overlapping a kept one by more than `threshold`. */
export function nonMaxSuppression(detections: readonly Detection[], threshold: number): Detection[] {
  const sorted = [...detections].sort((a, b) => b.score - a.score);
  const kept: Detection[] = [];
  for (const d of sorted) {
    if (kept.every((k) => iou(k.box, d.box) <= threshold)) kept.push(d);
  }
  return kept;
}

/**
 * MediaPipe's weighted NMS: each kept detection is the score-weighted mean of the detections that
 * overlap it by more than `threshold` (box and landmarks), keeping its own score. Steadier boxes
 * than plain NMS for single-shot anchors.
 */
export function weightedNonMaxSuppression(detections: readonly Detection[], threshold: number): Detection[] {
  const sorted = [...detections].sort((a, b) => b.score - a.score);
  const used = new Array<boolean>(sorted.length).fill(false);
  const out: Detection[] = [];
  sorted.forEach((lead, i) => {
    if (used[i] === true) return;
    const group: Detection[] = [];
    sorted.forEach((d, j) => {
      if (j >= i && used[j] !== true && iou(lead.box, d.box) > threshold) {
        used[j] = true;
        group.push(d);
      }
    });
    if (group.length === 0) group.push(lead);
    const total = group.reduce((sum, d) => sum + d.score, 0);
    const mean = (f: (d: Detection) => number): number =>
      group.reduce((sum, d) => sum + f(d) * d.score, 0) / total;
    out.push({
      box: {
        x1: mean((d) => d.box.x1),
        y1: mean((d) => d.box.y1),
        x2: mean((d) => d.box.x2),
        y2: mean((d) => d.box.y2),
      },
      score: lead.score,
      landmarks: lead.landmarks.map((_, k) => ({
        x: mean((d) => d.landmarks[k]?.x ?? 0),
        y: mean((d) => d.landmarks[k]?.y ?? 0),
      })),
      layout: lead.layout,
    });
  });
  return out;
}

export function locationOf(box: Box, width: number, height: number): FaceLocation {
  const clamp = (v: number, max: number): number => Math.min(max, Math.max(0, Math.round(v)));
  return {
    top: clamp(box.y1, height),
    right: clamp(box.x2, width),
    bottom: clamp(box.y2, height),
    left: clamp(box.x1, width),
  };
}
