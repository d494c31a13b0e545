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

export interface Detection {
  readonly box: Box;
  readonly score: number;
  /** Eyes (left, right as seen in the image), nose tip, mouth corners (left, right): 5 points. */
  readonly landmarks: readonly Point[];
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

export function locationOf(box: Box, width: number, height: number): FaceLocation {
  const clamp = (v: number, max: number): number => Math.min(max, Math.max(0, Math.round(v)));
  return {
    top: clamp(box.y1, height),
    right: clamp(box.x2, width),
    bottom: clamp(box.y2, height),
    left: clamp(box.x1, width),
  };
}
