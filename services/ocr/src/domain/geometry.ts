import type { Box } from './tsv.js';

/**
 * Boxes found on the straightened page are reported on the page as uploaded (EXIF orientation
 * applied): each rotation the pipeline made (90° turns, the deskew) is undone in reverse order, a
 * box becoming the axis-aligned bounding box of its turned corners, clamped to the page.
 */

export interface Rotation {
  /** Clockwise degrees (image y axis pointing down), about the centre; the canvas grows to fit. */
  readonly degrees: number;
  readonly inWidth: number;
  readonly inHeight: number;
  readonly outWidth: number;
  readonly outHeight: number;
}

/** The canvas an image of `width` x `height` needs once turned by `degrees`. */
export function rotatedSize(
  width: number,
  height: number,
  degrees: number,
): { width: number; height: number } {
  const a = (degrees * Math.PI) / 180;
  const c = Math.abs(Math.cos(a));
  const s = Math.abs(Math.sin(a));
  return { width: Math.round(width * c + height * s), height: Math.round(width * s + height * c) };
}

function unrotate(box: Box, r: Rotation): Box {
  const a = (r.degrees * Math.PI) / 180;
  const cos = Math.cos(a);
  const sin = Math.sin(a);
  const corners = [
    [box.x, box.y],
    [box.x + box.width, box.y],
    [box.x, box.y + box.height],
    [box.x + box.width, box.y + box.height],
  ] as const;
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const [px, py] of corners) {
    const dx = px - r.outWidth / 2;
    const dy = py - r.outHeight / 2;
    // Inverse of the clockwise turn [cos -sin; sin cos].
    const x = dx * cos + dy * sin + r.inWidth / 2;
    const y = -dx * sin + dy * cos + r.inHeight / 2;
    minX = Math.min(minX, x);
    minY = Math.min(minY, y);
    maxX = Math.max(maxX, x);
    maxY = Math.max(maxY, y);
  }
  return clamp({ x: minX, y: minY, width: maxX - minX, height: maxY - minY }, r.inWidth, r.inHeight);
}

/** Integer box inside a `width` x `height` page. */
export function clamp(box: Box, width: number, height: number): Box {
  const x0 = Math.min(width, Math.max(0, Math.round(box.x)));
  const y0 = Math.min(height, Math.max(0, Math.round(box.y)));
  const x1 = Math.min(width, Math.max(x0, Math.round(box.x + box.width)));
  const y1 = Math.min(height, Math.max(y0, Math.round(box.y + box.height)));
  return { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

/** `box` on the final image, on the original page: `rotations` in the order they were applied. */
export function mapBoxToSource(box: Box, rotations: readonly Rotation[]): Box {
  let out = box;
  for (let i = rotations.length - 1; i >= 0; i--) out = unrotate(out, rotations[i] as Rotation);
  return out;
}
